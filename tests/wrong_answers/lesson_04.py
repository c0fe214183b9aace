"Wrong answers for notebook 04's exercises (threads and barriers)."
from . import Wrong

FIRST_BARRIER = "        syncb.wait()                          # every thread has stored its elements: the tiles are complete\n"
SECOND_BARRIER = "        syncb.wait()                          # every thread has read them: the next phase may overwrite them\n"
PRODUCTS = "        for i in range(tw): p += ms[tr*tw + i] * ns[i*tw + tc]\n"
EPILOGUE = "    if r < h and c < w: out[r*w + c] = max(p + bias[c], 0.)"
PHASE_START = "        idx = ph * tw\n"
# Notebook 10's sentence for sums set to 0 in every phase, which 04.1 shares.
SUM_RESET = r"these are the values of a kernel that sets its sums to 0 again for every tile of k, so only the last tile's products remain"

WRONG = [
    # 04.1: the barriers and the epilogue of matmul_bias_relu_k
    Wrong('04.1', 'a barrier inside an if',
          change=(FIRST_BARRIER, "        if r < h and c < w: syncb.wait()\n"),
          expect=r"matmul_bias_relu_k \(the `#\| exercise 04.1` cell\): the barrier at line \d+ is inside the `if`"),
    Wrong('04.1', 'the second barrier missing',
          change=(SECOND_BARRIER, ""),
          expect=r"no barrier between reading shared memory \(line \d+\) and the next pass of the loop filling it again"),
    Wrong('04.1', 'the first barrier missing',
          change=(FIRST_BARRIER, ""),
          expect=r"no barrier between filling shared memory \(line \d+\) and reading it \(line \d+\)"),
    Wrong('04.1', 'two barriers side by side, before the products',
          change=(PRODUCTS + SECOND_BARRIER, SECOND_BARRIER + PRODUCTS),
          expect=r"no barrier between reading shared memory \(line \d+\) and the next pass of the loop filling it again"),
    Wrong('04.1', 'guard r <= h on the store',
          change=(EPILOGUE, EPILOGUE.replace('r < h', 'r <= h')),
          expect=r"writes out\[\d+\], outside the buffer, which has \d+ elements.*a bound check is missing or wrong"),
    Wrong('04.1', 'the bias added inside the k loop',
          change=(PRODUCTS + SECOND_BARRIER + EPILOGUE,
                  PRODUCTS + "        if c < w: p += bias[c]\n" + SECOND_BARRIER + "    if r < h and c < w: out[r*w + c] = max(p, 0.)"),
          expect=r"element \[\d+, \d+\] is .*these are the values of a kernel that adds the bias 3 times \(once per tile of k\)"),
    Wrong('04.1', 'the bias added inside the k loop and again after it',
          change=(PRODUCTS, PRODUCTS + "        if c < w: p += bias[c]\n"),
          expect=r"adds the bias 4 times \(once per tile of k and once after the loop\)"),
    Wrong('04.1', 'the ReLU before the sum is complete',
          change=(PRODUCTS, PRODUCTS + "        p = max(p, 0.)\n"),
          expect=r"applies the ReLU after each tile of k, to a sum that is not complete yet"),
    Wrong('04.1', 'the ReLU before the bias',
          change=(EPILOGUE, "    if r < h and c < w: out[r*w + c] = max(p, 0.) + bias[c]"),
          expect=r"applies the ReLU before adding the bias"),
    Wrong('04.1', 'no ReLU',
          change=(EPILOGUE, "    if r < h and c < w: out[r*w + c] = p + bias[c]"),
          expect=r"never applies the ReLU"),
    Wrong('04.1', 'the epilogue stored in every phase',
          change=(SECOND_BARRIER, SECOND_BARRIER + "    " + EPILOGUE + "\n"),
          expect=r"writes \d+ global values; storing each output element once needs at most 1"),
    Wrong('04.1', 'the products in a while loop that never advances (an endless loop)',
          change=(PRODUCTS, "        i = 0\n        while i < tw: p += ms[tr*tw + i] * ns[i*tw + tc]\n"),
          expect=r"still running after \d+ s, in the loop `while i < tw: p \+= ms\[tr\*tw \+ i\] \* ns\[i\*tw \+ tc\]` at "
                 r"line \d+ of the `#\| exercise 04.1` cell"),

    Wrong('04.1', 'the sum set to 0 at the start of every phase',
          change=(PHASE_START, PHASE_START + "        p = 0.\n"), expect=SUM_RESET),
    Wrong('04.1', 'the sum set to 0 after the first barrier, before the products',
          change=(FIRST_BARRIER + PRODUCTS, FIRST_BARRIER + "        p = 0\n" + PRODUCTS), expect=SUM_RESET),
    Wrong('04.1', "each phase's products assigned to the sum, not added to it",
          change=(PRODUCTS, "        p = sum(ms[tr*tw + i] * ns[i*tw + tc] for i in range(tw))\n"), expect=SUM_RESET),
    Wrong('04.1', 'each product assigned to the sum, not added to it',
          change=(PRODUCTS, PRODUCTS.replace("p +=", "p =")),
          expect=r"these are the values of a kernel that keeps only its last product"),

    # 04.2: rectangular tiles, the loads shared among the block's threads
    Wrong('04.2', 'the load loop never advances (an endless while loop)',
          change=("        for j in range(tc, tk, tw):                # row tr of ms: the tw threads of the row share its tk loads\n"
                  "            ms[tr*tk + j] = m[r*k + idx + j] if r < h and idx + j < k else 0.\n",
                  "        j = tc\n        while j < tk:\n            ms[tr*tk + j] = m[r*k + idx + j] if r < h and idx + j < k else 0.\n"),
          expect=r"still running after \d+ s, in the loop `while j < tk:` at line \d+ of the `#\| exercise 04.2` cell"),
    Wrong('04.2', 'a barrier inside an if',
          change=("        syncb.wait()\n        for i in range(tk)", "        if r < h: syncb.wait()\n        for i in range(tk)"),
          expect=r"matmul_rect_k \(the `#\| exercise 04.2` cell\): the barrier at line \d+ is inside the `if`"),
    Wrong('04.2', 'the second barrier missing',
          change=("        syncb.wait()\n    if r < h", "    if r < h"),
          expect=r"no barrier between reading shared memory .* and the next pass of the loop filling it again"),
    Wrong('04.2', 'a syntax error',
          change=("for i in range(tk): p +=", "for i in range(tk) p +="),
          expect=r"the `#\| exercise 04.2` cell does not compile: SyntaxError at line \d+"),
    Wrong('04.2', 'a misspelt name',
          change=("ns[i*tw + tc] = n[(idx + i)*w + c]", "ns[i*tw + tc] = nn[(idx + i)*w + c]"),
          expect=r"raised NameError at line \d+ of the `#\| exercise 04.2` cell: `.*nn\[.*`: name 'nn' is not defined"),
    Wrong('04.2', 'the ms loop stepping by th (some elements never loaded)',
          change=("for j in range(tc, tk, tw):", "for j in range(tc, tk, th):"),
          expect=r"in block \(x=\d+, y=\d+\), ms\[\d+\]\[\d+\] is stored 0 times in \d+ phases: no thread loads it in some phase"),
    Wrong('04.2', 'both loops with their strides swapped',
          change=("        for j in range(tc, tk, tw):                # row tr of ms: the tw threads of the row share its tk loads\n"
                  "            ms[tr*tk + j] = m[r*k + idx + j] if r < h and idx + j < k else 0.\n"
                  "        for i in range(tr, tk, th):",
                  "        for j in range(tc, tk, th):\n"
                  "            ms[tr*tk + j] = m[r*k + idx + j] if r < h and idx + j < k else 0.\n"
                  "        for i in range(tr, tk, tw):"),
          expect=r"both load ns\[\d+\]\[\d+\] in the same phase, so the loads overlap and some other element is left out"),
    Wrong('04.2', 'reading outside m on the last tile (k bound off by one)',
          change=("if r < h and idx + j < k else 0.", "if r < h and idx + j <= k else 0."),
          expect=r"reads m\[\d+\], outside the buffer, which has \d+ elements.*a bound check is missing or wrong"),
]

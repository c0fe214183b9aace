"Wrong answers for notebook 04's exercises (threads and barriers)."
from . import Wrong

WRONG = [
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
]

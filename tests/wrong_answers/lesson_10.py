"Wrong answers for notebook 10's exercises (register tiling)."
from course.exercises.learner_code import solution_sections

from . import Wrong
from .lesson_07 import endless_loop

PREAMBLE, SECTIONS = solution_sections('10')

# 10.1: the thread simulator
B_IN_REGISTER = ("            b = Bs[kk*BN + tc]                        # one shared read ...\n"
                 "            for t in range(TM): acc[t] += As[(tr*TM + t)*BK + kk] * b   # ... serves TM multiply-adds\n")
SIM_BARRIER = "        syncb.wait()\n"

# 10.2: CUDA C
REGTILE = SECTIONS['10.2']
KERNEL = REGTILE[REGTILE.index('template <int BM'):REGTILE.index('extern "C"')]
A_TRANSPOSED_STORE = "        AsT[ac][ar] = a4.x; AsT[ac + 1][ar] = a4.y; AsT[ac + 2][ar] = a4.z; AsT[ac + 3][ar] = a4.w;   // into 4 rows of AsT\n"
A_FLOAT4_LOAD = "        const float4 a4 = load4(A, M, K, m0 + ar, k0 + ac, fast);   // 4 neighbours in A's row: 4 values of k\n"
A_READ = "            for (int t = 0; t < TM; t += 4) *reinterpret_cast<float4*>(&a[t]) = *reinterpret_cast<const float4*>(&AsT[k][row + t]);\n"
OUTER_PRODUCT = ("            #pragma unroll\n            for (int t = 0; t < TM; ++t)\n                #pragma unroll\n"
                 "                for (int u = 0; u < TN; ++u) acc[t][u] += a[t] * b[u];\n")
STORE = "            if (m0 + row + t < M && n0 + col + u < N) C[(m0 + row + t) * N + n0 + col + u] = acc[t][u];\n"
B_STORE = "        *reinterpret_cast<float4*>(&Bs[br][bc]) = b4;\n"
B_READ = "            for (int u = 0; u < TN; u += 4) *reinterpret_cast<float4*>(&b[u]) = *reinterpret_cast<const float4*>(&Bs[k][col + u]);\n"
B_TRANSPOSED_READ = "            for (int u = 0; u < TN; ++u) b[u] = BsT[col + u][k];\n"
B_READ_ACROSS_K = (r"B's tile is read across k: in the PTX of regtile_2d, \d+ groups of 4 neighbouring floats that the multiply-adds "
                   r"read from B's tile in shared memory each hold values of 4 different k")


def solution_with(exercise, *changes):
    "The cell body of the exercise's solution with several (old, new) changes, each of text found once."
    body = SECTIONS[exercise]
    for old, new in changes:
        assert body.count(old) == 1, old
        body = body.replace(old, new)
    return PREAMBLE + body


# 10.3: Numba
NUMBA_ZERO = "        for i in range(TM):\n            for j in range(TN): acc[i, j] = f32(0)\n"
NUMBA_FMA = "                    for j in range(TN): acc[i, j] += a[i] * b[j]   # ... for TM * TN multiply-adds, in registers\n"
NUMBA_FIRST_BARRIER = "            cuda.syncthreads()                              # the tiles are complete\n"
NUMBA_SECOND_BARRIER = "            cuda.syncthreads()                              # every thread is done with the tiles\n"
NUMBA_STORE = "                if r < M and c < N: C[r, c] = acc[i, j]"

WRONG = [
    # 10.1
    Wrong('10.1', 'Bs read inside the t loop, for every multiply-add',
          change=(B_IN_REGISTER, "            for t in range(TM): acc[t] += As[(tr*TM + t)*BK + kk] * Bs[kk*BN + tc]\n"),
          expect=r"reads \d+ shared values for its \d+ multiply-adds \(2\.00 per multiply-add\); a register tile of TM = 4 "
                 r"needs at most \d+ \(1\.25 per multiply-add\), so its values of Bs are read again"),
    Wrong('10.1', 'the second barrier missing',
          change=(SIM_BARRIER + "    for t in range(TM):", "    for t in range(TM):"),
          expect=r"no barrier between reading shared memory \(line \d+\) and the next pass of the loop filling it again"),
    Wrong('10.1', 'the first barrier missing',
          change=(SIM_BARRIER + "        for kk in range(BK):", "        for kk in range(BK):"),
          expect=r"no barrier between filling shared memory \(line \d+\) and reading it \(line \d+\)"),
    Wrong('10.1', 'a barrier inside an if',
          change=(SIM_BARRIER + "        for kk in range(BK):", "        if r0 + tr*TM < h: syncb.wait()\n        for kk in range(BK):"),
          expect=r"regtile_1d_k \(the `#\| exercise 10.1` cell\): the barrier at line \d+ is inside the `if`"),
    Wrong('10.1', 'acc overwritten (= instead of +=)',
          change=("acc[t] += As[(tr*TM + t)*BK + kk] * b", "acc[t] = As[(tr*TM + t)*BK + kk] * b"),
          expect=r"keeps only its last product: each product replaces the sum instead of being added to it"),
    Wrong('10.1', 'acc set to 0 for every tile of k',
          change=("    acc = [0.] * TM\n    for idx in range(0, k, BK):\n", "    for idx in range(0, k, BK):\n        acc = [0.] * TM\n"),
          expect=r"sets its sums to 0 again for every tile of k, so only the last tile's products remain"),
    # 10.2
    Wrong('10.2', "notebook 10's step 2 unchanged (A's tile As[BM][BK], loaded one float at a time)",
          body=PREAMBLE + REGTILE.replace(KERNEL, "''' + nb10.BLOCKTILE_2D.replace('blocktile_2d', 'regtile_2d') + r'''\n"),
          expect=r"A's tile is not stored transposed: in the PTX of regtile_2d, \d+ groups of 4 neighbouring floats"),
    Wrong('10.2', "A's tile as it lies in A (As[BM][BK]), loaded with float4",
          body=solution_with('10.2', ("AsT[BK][BM + PAD]", "As[BM][BK + PAD]"),
                            (A_TRANSPOSED_STORE, "        *reinterpret_cast<float4*>(&As[ar][ac]) = a4;\n"),
                            (A_READ, "            for (int t = 0; t < TM; ++t) a[t] = As[row + t][k];\n")),
          expect=r"A's tile is not stored transposed"),
    Wrong('10.2', "A's float4 stored as it came, into a tile read transposed",
          change=(A_TRANSPOSED_STORE, "        *reinterpret_cast<float4*>(&AsT[ar][ac]) = a4;\n"),
          expect=r"the 4 values of A's float4 go into shared memory side by side, as they lie in A's row"),
    Wrong('10.2', "transposed, but A's tile loaded one float at a time (step 2's loop)",
          body=solution_with('10.2', (A_FLOAT4_LOAD, ""),
                            (A_TRANSPOSED_STORE, "        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) "
                                                 "AsT[i % BK][i / BK] = at(A, M, K, m0 + i / BK, k0 + i % BK);\n")),
          expect=r"A's tile is not read from global memory with 128-bit loads \(the PTX of regtile_2d has 1 128-bit global load"),
    Wrong('10.2', "B's tile read as Bs[n][k] (transposed) from a tile stored as it lies in B",
          change=(B_READ, "            for (int u = 0; u < TN; ++u) b[u] = Bs[col + u][k];\n"),
          expect=B_READ_ACROSS_K),
    Wrong('10.2', "B's tile transposed too, as A's is (stored and read as BsT[n][k])",
          body=solution_with('10.2', ("Bs[BK][BN];", "BsT[BN][BK + PAD];"),
                            (B_STORE, "        BsT[bc][br] = b4.x; BsT[bc + 1][br] = b4.y; BsT[bc + 2][br] = b4.z; BsT[bc + 3][br] = b4.w;\n"),
                            (B_READ, B_TRANSPOSED_READ)),
          expect=B_READ_ACROSS_K),
    Wrong('10.2', "B's tile transposed, loaded one float at a time",
          body=solution_with('10.2', ("Bs[BK][BN];", "BsT[BN][BK + PAD];"),
                            (B_STORE, "        for (int i = threadIdx.x; i < BK * BN; i += blockDim.x) "
                                      "BsT[i % BN][i / BN] = at(B, K, N, k0 + i / BN, n0 + i % BN);\n"),
                            (B_READ, B_TRANSPOSED_READ)),
          expect=B_READ_ACROSS_K),
    Wrong('10.2', 'the loop over the tiles of k never advances (its step k0 + BK thrown away)',
          change=("for (int k0 = 0; k0 < K; k0 += BK)", "for (int k0 = 0; k0 < K; k0 + BK)"),
          expect=endless_loop('10.2', 'for (int k0 = 0; k0 < K; k0 + BK)', r"its step `k0 \+ BK` computes a value and throws it away")),
    Wrong('10.2', 'the second __syncthreads missing',
          change=("        }\n        __syncthreads();\n    }\n", "        }\n    }\n"),
          expect=r"the kernel needs two __syncthreads\(\) per tile of k.*\(the (PTX|SASS) of regtile_2d has 1 barriers\)"),
    Wrong('10.2', 'a __syncthreads inside an if',
          change=("        *reinterpret_cast<float4*>(&Bs[br][bc]) = b4;\n        __syncthreads();\n",
                  "        *reinterpret_cast<float4*>(&Bs[br][bc]) = b4;\n        if (m0 + row < M) __syncthreads();\n"),
          expect=r"the __syncthreads\(\) at line \d+ of the `#\| exercise 10.2` cell \(regtile_2d\) is inside `if \(m0 \+ row < M\)`"),
    Wrong('10.2', 'acc indexed with a runtime value (the t loop kept rolled: local memory)',
          change=(OUTER_PRODUCT, OUTER_PRODUCT.replace("            #pragma unroll\n            for (int t", "            #pragma unroll 1\n            for (int t")),
          expect=r"the register tile spilled to local memory.*\(the (PTX|SASS) of regtile_2d has \d+ local memory\)"),
    Wrong('10.2', 'no bound check on the store',
          change=(STORE, "            C[(m0 + row + t) * N + n0 + col + u] = acc[t][u];\n"),
          cpu='not checked here',
          expect=r"element \[\d+, \d+\] is|out of bounds on the GPU|outside a buffer"),

    # 10.3
    Wrong('10.3', 'shared memory read in every multiply-add',
          change=(NUMBA_FMA, "                    for j in range(TN): acc[i, j] += As[k, row + U(i)] * Bs[k, col + U(j)]\n"),
          expect=r"As\[k, row \+ U\(i\)\] at line \d+ of the `#\| exercise 10.3` cell: .* reads shared memory in the innermost loop of the multiply-adds"),
    Wrong('10.3', 'no barriers at all',
          body=solution_with('10.3', (NUMBA_FIRST_BARRIER, ""), (NUMBA_SECOND_BARRIER, "")),
          expect=r"the kernel never calls cuda.syncthreads\(\)"),
    Wrong('10.3', 'the first barrier missing',
          change=(NUMBA_FIRST_BARRIER, ""),
          expect=r"no barrier between filling shared memory \(line \d+\) and reading it"),
    Wrong('10.3', 'the second barrier missing',
          change=(NUMBA_SECOND_BARRIER, ""),
          expect=r"no barrier between reading shared memory \(line \d+\) and the next pass of the loop filling it again"),
    Wrong('10.3', 'acc never set to 0',
          change=(NUMBA_ZERO, ""),
          expect=r"acc is never set to 0 before the multiply-adds add to it \(line \d+ of the `#\| exercise 10.3` cell"),
    Wrong('10.3', 'acc set to 0 for every tile of k',
          change=(NUMBA_ZERO + "        k0 = U(0)\n        while k0 < K:\n",
                  "        k0 = U(0)\n        while k0 < K:\n" + NUMBA_ZERO.replace("        ", "            ", 1).replace("            for j", "                for j")),
          expect=r"sets its sums to 0 again for every tile of k, so only the last tile's products remain"),
    Wrong('10.3', 'the outer product with a and b swapped (a[j] * b[i])',
          change=(NUMBA_FMA, "                    for j in range(TN): acc[i, j] += a[j] * b[i]\n"),
          expect=r"IndexError at line \d+ of the `#\| exercise 10.3` cell: `for j in range\(TN\): acc\[i, j\] \+= a\[j\] \* b\[i\]`.*out of bounds"),
    Wrong('10.3', 'off-by-one guard on the store (r <= M)',
          change=(NUMBA_STORE, NUMBA_STORE.replace("r < M", "r <= M")),
          expect=r"IndexError at line \d+ of the `#\| exercise 10.3` cell: `if r <= M and c < N: C\[r, c\] = acc\[i, j\]`.*out of bounds"),
    Wrong('10.3', 'the store loop bounded by M (acc indexed at run time: local memory)',
          change=("        for i in range(TM):\n            for j in range(TN):\n                r, c = m0 + row + U(i)",
                  "        for i in range(min(U(TM), M - m0 - row)):\n            for j in range(TN):\n                r, c = m0 + row + U(i)"),
          expect=r"acc\[i, j\] at line \d+ of the `#\| exercise 10.3` cell: .* is indexed with i, which is known only at run time"),
]

# Right answers written unusually: each must not be 'not yet'.
RIGHT = [
    Wrong('10.2', "B's values read one float at a time (not float4), along its row", expect='',
          change=(B_READ, "            for (int u = 0; u < TN; ++u) b[u] = Bs[k][col + u];\n")),
    Wrong('10.2', 'the tiles named sA and sB', expect='',
          body=PREAMBLE + REGTILE.replace('AsT', 'sA').replace('Bs[', 'sB[')),
]

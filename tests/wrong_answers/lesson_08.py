"Wrong answers for notebook 08's exercises (Numba)."
import re

from . import Wrong, solution_with

# An endless loop is stopped by the watchdog, whose sentence names the thread, the loop and the cell.
def endless(cell, loop):
    return (rf"(?=.*thread \(x=\d+, y=\d+\) of block \(x=\d+, y=\d+\) was still running after \d+ s)(?=.*`{re.escape(loop)}`)"
            rf"(?=.*line \d+ of the `#\| exercise {cell}` cell)")

NT_INDICES = "        r, c = cuda.blockIdx.y*tw + tr, cuda.blockIdx.x*tw + tc\n"
NT_FIRST_BARRIER = ("            cuda.syncthreads()\n            for i in range(tw)",
                    "            if r < h and c < w: cuda.syncthreads()\n            for i in range(tw)")
MATVEC_ROW = "    r = cuda.blockIdx.x * CHUNK + t\n"
MATVEC_CHUNK = ("        cuda.syncthreads()\n        if r < h:\n            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]\n"
                "        cuda.syncthreads()\n")


def barrier_in_if(cell, what):
    "The sentence for a barrier inside an `if` whose condition differs between threads, read from the kernel's source."
    return (rf"{what} \(the `#\| exercise {cell}` cell\): the barrier at line \d+ is inside the `if` of line \d+: threads for "
            r"which the condition is false never reach it")


WRONG = [
    # 08.1: B given transposed
    Wrong('08.1', 'the tile of nt loaded as the lesson loads n (uncoalesced)',
          change=("ns[tc, tr] = nt[row, idx + tc] if row < w and idx + tc < k",
                  "ns[tr, tc] = nt[c, idx + tr] if c < w and idx + tr < k"),
          expect=r"threads \(x=0, y=0\) and \(x=1, y=0\) of block .* read nt\[\d+\] and nt\[\d+\]: neighbouring threads "
                 r"should read neighbouring elements"),
    Wrong('08.1', 'the barrier after the loads missing',
          change=("            cuda.syncthreads()\n            for i in range(tw)", "            for i in range(tw)"),
          expect=r"nt_tile_kernel\(4\) \(the `#\| exercise 08\.1` cell\): no barrier between filling shared memory \(line \d+\) and reading it"),
    Wrong('08.1', 'two barriers side by side, none after the products',
          change=("            for i in range(tw): p += ms[tr, i] * ns[i, tc]\n            cuda.syncthreads()\n",
                  "            cuda.syncthreads()\n            for i in range(tw): p += ms[tr, i] * ns[i, tc]\n"),
          expect=r"no barrier between reading shared memory .* and the next pass of the loop filling it again"),
    Wrong('08.1', 'a barrier inside an if',
          change=("            cuda.syncthreads()\n            for i in range(tw)", "            if r < h: cuda.syncthreads()\n            for i in range(tw)"),
          expect=r"nt_tile_kernel\(4\) \(the `#\| exercise 08\.1` cell\): the barrier at line \d+ is inside the `if` of line \d+"),
    Wrong('08.1', 'r <= h in the guard of the store',
          change=("if r < h and c < w: out[r, c] = p", "if r <= h and c < w: out[r, c] = p"),
          expect=r"thread \(x=\d+, y=\d+\) of block \(x=\d+, y=\d+\) writes out\[5, \d+\], outside out \(shape 5 x 3\) "
                 r"at line \d+ of the `#\| exercise 08\.1` cell: `if r <= h.*a bound check is missing or wrong"),
    Wrong('08.1', 'the factory not cached',
          change=("@functools.cache                                    # one kernel per tile width: Numba compiles each once\n", ""),
          expect=r"nt_tile_kernel\(4\) makes a new kernel on every call.*each tile width is compiled again on every call"),
    Wrong('08.1', 'dynamic shared arrays',
          change=("ms = cuda.shared.array((tw, tw), numba.float32)", "ms = cuda.shared.array(0, numba.float32)"),
          expect=r"the shared array of the kernel of nt_tile_kernel\(4\) at line \d+ of the `#\| exercise 08\.1` cell.* is "
                 r"dynamic \(size 0\)"),
    Wrong('08.1', 'the inner while loop never advances (an endless loop)',
          change=("for i in range(tw): p += ms[tr, i] * ns[i, tc]",
                  "i = 0\n            while i < tw: p += ms[tr, i] * ns[i, tc]"),
          expect=endless('08.1', 'while i < tw: p += ms[tr, i] * ns[i, tc]')),

    # A barrier inside an `if` on the indices of cuda.grid, which differ between threads as threadIdx does
    Wrong('08.1', 'the first barrier inside an if on the indices of cuda.grid(2)',
          body=solution_with('08.1', (NT_INDICES, "        c, r = cuda.grid(2)\n"), NT_FIRST_BARRIER),
          expect=barrier_in_if('08.1', r'the kernel of nt_tile_kernel\(4\)')),
    Wrong('08.1', 'both barriers inside an if on cuda.grid(2)',
          body=solution_with('08.1', (NT_INDICES, "        c, r = cuda.grid(2)\n"), NT_FIRST_BARRIER,
                             ("            for i in range(tw): p += ms[tr, i] * ns[i, tc]\n            cuda.syncthreads()\n",
                              "            for i in range(tw): p += ms[tr, i] * ns[i, tc]\n            if r < h and c < w: cuda.syncthreads()\n")),
          expect=barrier_in_if('08.1', r'the kernel of nt_tile_kernel\(4\)')),

    # 08.2: a matrix-vector product
    Wrong('08.2', 'v read from global memory, not through shared memory',
          change=("            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]",
                  "            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * v[c0 + j]"),
          expect=r"thread \(x=\d+, y=0\) of block \(x=0, y=0\) reads \d+ values of v from global memory; copying each chunk "
                 r"of v into shared memory once per block .* needs at most 1"),
    Wrong('08.2', 'the barrier after the copy missing',
          change=("        cuda.syncthreads()\n        if r < h:", "        if r < h:"),
          expect=r"matvec_numba_k \(the `#\| exercise 08\.2` cell\): no barrier between filling shared memory \(line \d+\) and reading it"),
    Wrong('08.2', 'two barriers side by side, none after the products',
          change=("        cuda.syncthreads()\n        if r < h:\n            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]\n        cuda.syncthreads()\n",
                  "        cuda.syncthreads()\n        cuda.syncthreads()\n        if r < h:\n            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]\n"),
          expect=r"no barrier between reading shared memory .* and the next pass of the loop filling it again"),
    Wrong('08.2', 'a barrier inside an if',
          change=("        cuda.syncthreads()\n        if r < h:", "        if r < h:\n            cuda.syncthreads()"),
          expect=r"matvec_numba_k \(the `#\| exercise 08\.2` cell\): the barrier at line \d+ is inside the `if` of line \d+"),
    Wrong('08.2', 'the barriers inside an if on the row of cuda.grid(1)',
          body=solution_with('08.2', (MATVEC_ROW, "    r = cuda.grid(1)\n"),
                             (MATVEC_CHUNK, "        if r < h:\n            cuda.syncthreads()\n"
                                            "            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]\n"
                                            "            cuda.syncthreads()\n")),
          expect=barrier_in_if('08.2', 'matvec_numba_k')),
    Wrong('08.2', 'a barrier inside an if on cuda.grid(1) itself',
          change=("        cuda.syncthreads()\n        if r < h:", "        if cuda.grid(1) < h: cuda.syncthreads()\n        if r < h:"),
          expect=barrier_in_if('08.2', 'matvec_numba_k')),
    Wrong('08.2', 'a barrier in each branch of the guarded copy',
          change=("        vs[t] = v[c0 + t] if c0 + t < k else numba.float32(0.0)\n        cuda.syncthreads()\n",
                  "        if c0 + t < k:\n            vs[t] = v[c0 + t]\n            cuda.syncthreads()\n"
                  "        else:\n            vs[t] = numba.float32(0.0)\n            cuda.syncthreads()\n"),
          expect=barrier_in_if('08.2', 'matvec_numba_k')),
    Wrong('08.2', 'no zero past the end of v',
          change=("vs[t] = v[c0 + t] if c0 + t < k else numba.float32(0.0)", "vs[t] = v[c0 + t]"),
          expect=r"thread \(x=\d+, y=0\) of block \(x=0, y=0\) reads v\[\d+\], outside v \(shape 7\) at line \d+ of the "
                 r"`#\| exercise 08\.2` cell"),
    Wrong('08.2', 'r <= h in the guard of the store',
          change=("    if r < h: out[r] = acc", "    if r <= h: out[r] = acc"),
          expect=r"thread \(x=5, y=0\) of block \(x=0, y=0\) writes out\[5\], outside out \(shape 5\) at line \d+ of the `#\| exercise 08\.2` cell: `if r <= h"),
    Wrong('08.2', 'the inner while loop never advances (an endless loop)',
          change=("            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]",
                  "            j = 0\n            while j < min(CHUNK, k - c0): acc += m[r, c0 + j] * vs[j]"),
          expect=endless('08.2', 'while j < min(CHUNK, k - c0): acc += m[r, c0 + j] * vs[j]')),
    Wrong('08.1', "the padded tile's shape computed inside the kernel",
          change=("ns = cuda.shared.array((tw, padded), numba.float32)", "ns = cuda.shared.array((tw, tw + 1), numba.float32)"),
          expect=r"the shape of the shared array of .* is computed inside the kernel, which Numba rejects on a GPU"),
]

# Right answers near the rules' edges: each must not be rejected.
RIGHT = [
    Wrong('08.1', "the output's row and column from cuda.grid(2), the barriers outside every if",
          change=(NT_INDICES, "        c, r = cuda.grid(2)\n"), expect=''),
    Wrong('08.2', 'the row from cuda.grid(1), the barriers outside every if',
          change=(MATVEC_ROW, "    r = cuda.grid(1)\n"), expect=''),
    Wrong('08.2', 'the products guarded by cuda.grid(1) itself, the barriers outside',
          change=("        if r < h:\n            for j", "        if cuda.grid(1) < h:\n            for j"), expect=''),
]

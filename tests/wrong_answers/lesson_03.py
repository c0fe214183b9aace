"Wrong answers for notebook 03's exercises (run_threads, coalescing, and its CUDA C twin)."
from course.exercises.learner_code import solution_sections

from . import Wrong, solution_with

STORE_TILE = ("        r, c = blockIdx.x*tw + tr, blockIdx.y*tw + tc     # out is w x h\n"
              "        if r < w and c < h: out[r*h + c] = shared[tc*tw + tr]\n")

SCALE_ROWS_PYTHON_SWAPPED = '''
def scale_rows_k(blockIdx, threadIdx, blockDim, m, s, out, h, w):
    c = blockIdx.x*blockDim.x + threadIdx.x
    r = blockIdx.y*blockDim.y + threadIdx.y
    if r < h and c < w: out[c*h + r] = m[c*h + r] * s[r]


def scale_rows_blocks(h, w, blockDim):
    return dim3(cdiv(w, blockDim.x), cdiv(h, blockDim.y))
'''

SCALE_ROWS_PYTHON_LOOPS = '''
def scale_rows_k(blockIdx, threadIdx, blockDim, m, s, out, h, w):
    {index} = blockIdx.x*blockDim.x + threadIdx.x       # one thread per {line}, a loop along it
    if threadIdx.y == 0 and {index} < {size}:
        for {other} in range({other_size}): out[c*h + r] = m[c*h + r] * s[r]


def scale_rows_blocks(h, w, blockDim):
    return dim3(cdiv({size}, blockDim.x), 1)
'''

CUDA_MAPPING = ("    int r = blockIdx.x*blockDim.x + threadIdx.x;     // threadIdx.x along r: a warp reads 32 neighbours of a column\n"
                "    int c = blockIdx.y*blockDim.y + threadIdx.y;\n")
CUDA_GUARD = "if (r < h && c < w) out[(size_t)c*h + r] = m[(size_t)c*h + r] * s[r];"
CUDA_GRID = "blocks(cdiv(h, tpb.x), cdiv(w, tpb.y));"


def cuda_solution():
    "The reference solution's cell body for 03.4 (the solution file's preamble and its section)."
    preamble, sections = solution_sections('03')
    return preamble + sections['03.4']


SCALE_ROWS_GRID = "return dim3(cdiv(h, blockDim.x), cdiv(w, blockDim.y))"
SCALE_ROWS_MAPPING = ("    r = blockIdx.x*blockDim.x + threadIdx.x     # threadIdx.x along r: from one thread of a warp to the next,\n"
                      "    c = blockIdx.y*blockDim.y + threadIdx.y     # c*h + r grows by one element, so the warp's accesses coalesce\n")


def surplus(side, count, idle):
    "The sentence for a grid with `count` blocks too many along `side`, those with blockIdx.<side> = `idle` writing nothing."
    return (rf"gives \d+ x \d+ blocks, {count} too many along {side}.*the blocks with blockIdx\.{side} = {idle} write no "
            rf"element of out: with your mapping, {side} needs \d+")


def assumed_block(numbers):
    "The sentence for a kernel or grid right with 32 x 4 blocks only, the numbers `numbers` written where blockDim belongs."
    return (r"with blocks of 64 x 2 threads.*It is right with blocks of 32 x 4 threads but not with 64 x 2, so your code "
            rf"assumes a block shape: the {numbers} at line \d+ of the `#\| exercise 03\.3` cell")


# scale_rows_blocks returning more blocks than needed along a side, or a block shape of its own: (slip, what it returns,
# the sentence).
GRID_SLIPS = (
    ('twice the blocks needed along x', "dim3(2*cdiv(h, blockDim.x), cdiv(w, blockDim.y))", surplus('x', 2, '2 and 3')),
    ('one block more than needed along y', "dim3(cdiv(h, blockDim.x), cdiv(w, blockDim.y) + 1)", surplus('y', 1, '11')),
    ('too many blocks along both sides', "dim3(cdiv(h, blockDim.x) + 1, 2*cdiv(w, blockDim.y))",
     r"gives 3 x 22 blocks, 1 too many along x and 11 along y: the blocks with blockIdx\.x = 2 write no element of out.*"
     r"the blocks with blockIdx\.y = 11 to 21 write no element of out"),
    ('h // blockDim.x + 1 blocks (one too many where the block divides the matrix)',
     "dim3(h // blockDim.x + 1, w // blockDim.y + 1)",
     r"scale_rows_blocks\(64, 8, dim3\(32, 4\)\) gives 3 x 3 blocks, 1 too many along x and 1 along y"),
    ('one block per element, whatever the block', "dim3(h, w)",
     r"gives 37 x 41 blocks, 35 too many along x and 30 along y: x needs at most 2 .*; y needs at most 11"),
    ('two layers of blocks along z', "dim3(cdiv(h, blockDim.x), cdiv(w, blockDim.y), 2)", r"gives 2 x 11 x 2 blocks, 1 too many along z"),
    ('the block shape written into the grid only', "dim3(cdiv(h, 32), cdiv(w, 4))", assumed_block('32 and 4')),
)

GPU_BOUNDS = r"writes \d+ value\(s\) outside out: a bound check is missing or off by one|came out inf.*a bound check is missing or off by one"

WRONG = [
    Wrong('03.1', 'no bound check when loading the chunk of v',
          change=("shared[tc] = v[i] if i < k else 0.", "shared[tc] = v[i]"),
          expect=r"reads v\[\d+\], outside the buffer.*a bound check is missing or wrong"),
    Wrong('03.1', 'the last, short chunk read as a whole one (past the end of the row)',
          change=("for i in range(min(tw, k - ph*tw)):", "for i in range(tw):"),
          expect=r"computes row \d+ of out but reads m\[\d+\].*past the end of that 7-column row: the last chunk holds only k - ph\*tw values"),
    Wrong('03.1', 'the dot products read v from global memory',
          change=("out[r] += m[r*k + ph*tw + i] * shared[i]", "out[r] += m[r*k + ph*tw + i] * v[ph*tw + i]"),
          expect=r"reads \d+ values of v from global memory; .*each thread reads one value of v per chunk, so it needs at most"),
    Wrong('03.1', 'loading and reading the chunk in one run_threads call (no barrier between them)',
          change=("    for ph in range(cdiv(k, tw)):\n        run_threads(load_chunk, blockDim, ph)\n        run_threads(dot_chunk, blockDim, ph)\n",
                  "    def load_and_dot(tr, tc, ph):\n        load_chunk(tr, tc, ph)\n        dot_chunk(tr, tc, ph)\n\n"
                  "    for ph in range(cdiv(k, tw)):\n        run_threads(load_and_dot, blockDim, ph)\n"),
          expect=r"a barrier is missing.*With run_threads, a barrier is the end of a call"),
    Wrong('03.1', 'no check that the row exists',
          change=("        if r >= h: return\n", ""),
          expect=r"computes row \d+ but m has \d+ rows: a thread past the last row must do nothing"),
    Wrong('03.2', 'an uncoalesced write straight from the tile',
          change=(STORE_TILE, "        r, c = blockIdx.y*tw + tr, blockIdx.x*tw + tc     # (r, c) of m\n"
                              "        if r < h and c < w: out[c*h + r] = shared[tr*tw + tc]\n"),
          expect=r"neighbouring threads should write neighbouring elements"),
    Wrong('03.2', 'the tile read untransposed in store_tile',
          change=("out[r*h + c] = shared[tc*tw + tr]", "out[r*h + c] = shared[tr*tw + tc]"),
          expect=r"writes m\[\d+, \d+\] into element \[\d+, \d+\] .*which must hold m\[\d+, \d+\]; the value comes from the right tile of m but the wrong element of it"),
    Wrong('03.2', "the block's indices not swapped in store_tile",
          change=(STORE_TILE, STORE_TILE.replace("r, c = blockIdx.x*tw + tr, blockIdx.y*tw + tc", "r, c = blockIdx.y*tw + tr, blockIdx.x*tw + tc")),
          expect=r"which must hold m\[\d+, \d+\]; the value comes from another tile of m|outside the buffer"),
    Wrong('03.2', 'no bound check in load_tile',
          change=("if r < h and c < w: shared[tr*tw + tc] = m[r*w + c]", "shared[tr*tw + tc] = m[r*w + c]"),
          expect=r"reads m\[\d+\], outside the buffer.*a bound check is missing or wrong"),
    Wrong('03.2', "store_tile's bound check uses m's bounds (h and w swapped)",
          change=("if r < w and c < h: out[r*h + c]", "if r < h and c < w: out[r*h + c]"),
          expect=r"writes out\[\d+\].*that thread's element \(r, c\) = \(\d+, \d+\) of out lies outside the w x h = 7 x 5 result|"
                 r"store_tile's bound check stops the thread that should write it"),
    Wrong('03.3', 'threadIdx.x along c (the uncoalesced mapping)',
          body=SCALE_ROWS_PYTHON_SWAPPED,
          expect=r"warp 0 \(threads x=0..31, y=0\) of block \(x=0, y=0\): its 1st read of m touches 32 sectors of 32 bytes "
                 r"where 4 would do: neighbouring threads read elements h = 37 apart"),
    Wrong('03.3', 'guard r <= h (off by one)',
          change=("if r < h and c < w: out[c*h + r]", "if r <= h and c < w: out[c*h + r]"),
          expect=r"reads (s|m)\[\d+\], outside the buffer.*a bound check is missing or wrong"),
    Wrong('03.3', 'the mapping changed but not the grid',
          change=("return dim3(cdiv(h, blockDim.x), cdiv(w, blockDim.y))", "return dim3(cdiv(w, blockDim.x), cdiv(h, blockDim.y))"),
          expect=r"element \(\d+, \d+\) of out is never written: the grid of \d+ x \d+ blocks"),
    Wrong('03.3', 'one thread per column, looping down it',
          body=SCALE_ROWS_PYTHON_LOOPS.format(index='c', line='column', size='w', other='r', other_size='h'),
          expect=r"its 1st read of m touches \d+ sectors of 32 bytes where \d+ would do: neighbouring threads read elements h = 37 apart"),
    Wrong('03.3', 'one thread per row, looping along it (coalesced, but many elements per thread)',
          body=SCALE_ROWS_PYTHON_LOOPS.format(index='r', line='row', size='h', other='c', other_size='w'),
          expect=r"reads \d+ values of m from global memory; one element per thread needs at most 1"),
    Wrong('03.3', 'the block shape 32 x 4 written into the kernel and the grid',
          body=solution_with('03.3', (SCALE_ROWS_MAPPING, "    r = blockIdx.x*32 + threadIdx.x\n    c = blockIdx.y*4 + threadIdx.y\n"),
                             (SCALE_ROWS_GRID, "return dim3(cdiv(h, 32), cdiv(w, 4))")),
          expect=assumed_block('32')),
    Wrong('03.3', 'the block width 32 written into the kernel only',
          change=("    r = blockIdx.x*blockDim.x + threadIdx.x ", "    r = blockIdx.x*32 + threadIdx.x "), expect=assumed_block('32')),

    *(Wrong('03.3', slip, change=(SCALE_ROWS_GRID, f"return {grid}"), expect=expect) for slip, grid, expect in GRID_SLIPS),

    Wrong('03.4', 'threadIdx.x along c, the grid to match (right, but uncoalesced)', cpu='not checked here',
          body=cuda_solution().replace(CUDA_MAPPING, "    int c = blockIdx.x*blockDim.x + threadIdx.x;\n"
                                                     "    int r = blockIdx.y*blockDim.y + threadIdx.y;\n")
                              .replace(CUDA_GRID, "blocks(cdiv(w, tpb.x), cdiv(h, tpb.y));"),
          expect=r"slower than the target of 0.50x: a kernel whose warps touch neighbouring addresses"),
    Wrong('03.4', 'guard r <= h (off by one)', cpu='not checked here',
          change=(CUDA_GUARD, CUDA_GUARD.replace("r < h", "r <= h")), expect=GPU_BOUNDS),
    Wrong('03.4', 'no bound check', cpu='not checked here',
          change=(CUDA_GUARD, CUDA_GUARD.replace("if (r < h && c < w) ", "")), expect=GPU_BOUNDS),
    Wrong('03.4', 'the mapping changed but not the grid', cpu='not checked here',
          change=(CUDA_GRID, "blocks(cdiv(w, tpb.x), cdiv(h, tpb.y));"),
          expect=r"element \(\d+, \d+\) of out is never written: the launch's grid does not reach it|"
                 r"writes \d+ value\(s\) outside out|came out inf"),
    Wrong('03.4', 'the product kept in a local variable, never stored',
          change=(CUDA_GUARD, "float p = 0.0f;\n    if (r < h && c < w) p = m[(size_t)c*h + r] * s[r];"),
          expect=r"scale_rows_k writes nothing to global memory \(its (PTX|SASS) has no global store\)"),
    Wrong('03.4', 'a missing semicolon',
          change=("    int c = blockIdx.y*blockDim.y + threadIdx.y;\n", "    int c = blockIdx.y*blockDim.y + threadIdx.y\n"),
          expect=r"nvcc cannot compile scale_rows_cuda_src.*line \d+ of the `#\| exercise 03.4` cell"),
]

# Right answers near the rules' edges: each must not be rejected.
RIGHT = [
    Wrong('03.3', "the block's sides unpacked from blockDim into names",
          change=(SCALE_ROWS_MAPPING, "    bx, by = blockDim.x, blockDim.y\n    r = blockIdx.x*bx + threadIdx.x\n"
                                      "    c = blockIdx.y*by + threadIdx.y\n"), expect=''),
    *(Wrong('03.3', slip, change=(SCALE_ROWS_GRID, grid), expect='') for slip, grid in (
        ('the grid by rounding up without cdiv, as a tuple', "return ((h + blockDim.x - 1) // blockDim.x, -(-w // blockDim.y))"),
        ('the grid by math.ceil, with a z of 1', "import math\n    return dim3(math.ceil(h / blockDim.x), math.ceil(w / blockDim.y), 1)"))),
]

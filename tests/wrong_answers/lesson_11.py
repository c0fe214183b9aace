"""Wrong answers for notebook 11's exercises (how many pieces of K the model of waves finds fastest, and which thread
reads which float of a tile whose rows do not start on 16 bytes), and right answers written unusually."""
from . import Wrong, solution_with

TILES = "    tiles, slots = cdiv(m, bm) * cdiv(n, bn), sms * blocks_per_sm "
PIECES = "    for pieces in range(1, min(16, cdiv(k, bk)) + 1): "
WAVES = "        waves = cdiv(tiles * pieces, slots) "
K_UNIT = "        k_unit = cdiv(cdiv(k, pieces), bk) * bk "
PARTIAL_IF = "        if pieces > 1:"
PARTIAL = "            flops += FLOPS_PER_BYTE * (2 * pieces + 1) * m * n * 4\n"
KEEP = "        if best is None or flops < best_flops:"
SPLIT_RETURN = "    return best\n"
SPLIT_DEF = "def best_split(m, k, n, bm, bn, bk, sms, blocks_per_sm):\n"

FLOAT_DEF = "def tile_float(thread, load, rows, cols):\n"
DOWN = ("    group, j = divmod(thread, cols)             # down (Four::down): cols threads share 4 rows, thread j reads column j\n"
        "    return 4 * group + load, j                  # a warp load: whole rows (cols <= 32) or 32 neighbours of one row\n")


def split_returning(expression):
    "The solution of 11.1 with `return <expression>`."
    return (SPLIT_RETURN, f"    return {expression}\n")


def layout(*lines):
    "The solution of 11.2 with its two lines replaced by `lines`."
    return (DOWN, ''.join(f"    {line}\n" for line in lines))


# The call of 11.1 on the lesson's skinny problem, as a sentence shows it
SKINNY = r"best_split\(m=256, k=8192, n=8192, bm=128, bn=128, bk=16, sms=132, blocks_per_sm=2\)"
# The sentence's account of the fastest split of the skinny problem
SKINNY_BEST = r"The fastest is 2 pieces: 128 tiles x 2 pieces = 256 units on 264 slots \(132 x 2\) run in 1 wave"
# The start of 11.2's sentence on the first tile asked, B's 8 x 128
TILE_B = r"tile_float on the 8 x 128 tile \(256 threads\), in a matrix whose rows are 4095 floats long"


WRONG = [
    # 11.1: how many pieces of K
    Wrong('11.1', 'never splits (the skeleton)',
          change=split_returning('1'),
          expect=SKINNY + r" returned 1: in the model .*128 tiles x 1 piece = 128 units on 264 slots \(132 x 2\) run in 1 "
                 r"wave, each as long as one unit's 8192 of K \(512 steps of 16\).*1\.058 ms in all\. " + SKINNY_BEST),
    Wrong('11.1', "hard-coded 2, the lesson's answer for the skinny problem",
          change=split_returning('2'),
          expect=r"best_split\(m=50000, k=10, n=1000, .*\) returned 2, but k = 10 makes only 1 step of bk = 16: a piece holds at least "
                 r"one whole step, so at most 1 piece"),
    Wrong('11.1', 'tiles rounded down (m // bm)',
          change=(TILES, "    tiles, slots = (m // bm) * (n // bn), sms * blocks_per_sm "),
          expect=r"best_split\(m=777, k=1234, n=999, bm=128, bn=128, .*\) returned 6: in the model .*56 tiles x 6 pieces = 336 units "
                 r".*The fastest is 4 pieces: 56 tiles x 4 pieces = 224 units on 264 slots \(132 x 2\) run in 1 wave"),
    Wrong('11.1', 'bm and bn swapped in the count of tiles',
          change=(TILES, "    tiles, slots = cdiv(m, bn) * cdiv(n, bm), sms * blocks_per_sm "),
          expect=r"best_split\(m=777, k=1234, n=999, bm=64, bn=128, .*\) returned 2: in the model .*104 tiles x 2 pieces.*The fastest "
                 r"is 5 pieces: 104 tiles x 5 pieces = 520 units"),
    Wrong('11.1', 'slots without blocks_per_sm',
          change=(TILES, "    tiles, slots = cdiv(m, bm) * cdiv(n, bn), sms "),
          expect=SKINNY + r" returned 1: .*on 264 slots \(132 x 2\) run in 1 wave.*" + SKINNY_BEST),
    Wrong('11.1', 'waves rounded down',
          change=(WAVES, "        waves = tiles * pieces // slots "),
          expect=SKINNY + r" returned 1: .*128 units on 264 slots \(132 x 2\) run in 1 wave, .*" + SKINNY_BEST),
    Wrong('11.1', 'waves as units // slots + 1 (one too many when the units fill the last wave)',
          change=(WAVES, "        waves = tiles * pieces // slots + 1 "),
          expect=r"sms=80, blocks_per_sm=1\) returned 3: .*The fastest is 5 pieces: 128 tiles x 5 pieces = 640 units on 80 slots "
                 r"\(80 x 1\) run in 8 waves"),
    Wrong('11.1', 'waves as a fraction (units / slots, the last wave not counted whole)',
          change=(WAVES, "        waves = tiles * pieces / slots "),
          expect=SKINNY + r" returned 1: .*run in 1 wave.*" + SKINNY_BEST),
    Wrong('11.1', 'the K of one unit not rounded up to whole steps of bk',
          change=(K_UNIT, "        k_unit = cdiv(k, pieces) "),
          expect=r"bk=32, sms=80, blocks_per_sm=1\) returned 5: .*each as long as one unit's 1664 of K \(52 steps of 32\).*The fastest "
                 r"is 4 pieces: .*one unit's 2048 of K \(64 steps of 32\)"),
    Wrong('11.1', 'ignores the partial sums',
          change=(PARTIAL_IF, "        if False:"),
          expect=r"returned 16: .*plus 0\.08263 ms for the partial sums \(33 x 256 x 8192 floats through device memory\).*The fastest "
                 r"is 7 pieces"),
    Wrong('11.1', 'partial sums counted with one piece too',
          change=(PARTIAL_IF, "        if pieces >= 1:"),
          expect=r"sms=3, blocks_per_sm=2\) returned 2: .*for the partial sums \(5 x 256 x 8192 floats.*The fastest is 1 piece: .*and "
                 r"no partial sums"),
    Wrong('11.1', "partial sums without C's write (2s floats, not 2s + 1)",
          change=(PARTIAL, "            flops += FLOPS_PER_BYTE * 2 * pieces * m * n * 4\n"),
          expect=r"returned 2: .*plus 0\.01252 ms for the partial sums \(5 x 256 x 8192 floats through device memory\).*The fastest "
                 r"is 1 piece: .*and no partial sums"),
    Wrong('11.1', 'partial sums in floats, not bytes',
          change=(PARTIAL, "            flops += FLOPS_PER_BYTE * (2 * pieces + 1) * m * n\n"),
          expect=r"returned 16: .*for the partial sums \(33 x 256 x 8192 floats through device memory\), 0\.5965 ms in all\. The "
                 r"fastest is 7 pieces"),
    Wrong('11.1', 'the most pieces among equals (<=)',
          change=(KEEP, "        if best is None or flops <= best_flops:"),
          expect=r"bk=16, sms=80, blocks_per_sm=1\) returned 5, which the model times as fast as 4 pieces, 0\.5434 ms each.*Where "
                 r"several numbers of pieces are as fast, the fewest is asked for"),
    Wrong('11.1', 'as many pieces as one wave holds (slots // tiles)',
          change=(SPLIT_RETURN, "    return max(1, min(16, cdiv(k, bk), slots // tiles))\n"),
          expect=r"sms=114, blocks_per_sm=2\) returned 1: .*128 units on 228 slots \(114 x 2\) run in 1 wave.*The fastest is 7 "
                 r"pieces: 128 tiles x 7 pieces = 896 units on 228 slots \(114 x 2\) run in 4 waves"),
    Wrong('11.1', 'the fewest pieces whose units fill the slots',
          change=(SPLIT_RETURN, "    return min(16, cdiv(k, bk), cdiv(slots, tiles))\n"),
          expect=SKINNY + r" returned 3: .*384 units on 264 slots \(132 x 2\) run in 2 waves.*" + SKINNY_BEST),
    Wrong('11.1', 'slots / tiles, a float',
          change=(SPLIT_RETURN, "    return max(1, min(16, cdiv(k, bk), slots / tiles))\n"),
          expect=SKINNY + r" returned 2\.0625, a float: pieces is a whole number"),
    Wrong('11.1', 'the index of the fastest (counted from 0)',
          change=split_returning('best - 1'),
          expect=r"blocks_per_sm=1\) returned 0: K is cut into 1 to 16 pieces"),
    Wrong('11.1', "returns (pieces, flops), as the lesson's best_splits returns (pieces, ms)",
          change=split_returning('best, best_flops'),
          expect=SKINNY + r" returned \(2, 36272340992\) \(tuple\): return the number of pieces alone, one whole number"),
    Wrong('11.1', 'no return',
          change=(SPLIT_RETURN, "\n"),
          expect=SKINNY + r" returned None: end the function with `return pieces`"),
    Wrong('11.1', 'ignores its arguments: counts its calls',
          change=(SPLIT_DEF, "CALLS = [0]\n\n\n" + SPLIT_DEF + "    CALLS[0] += 1\n    if CALLS[0] % 7 == 0: return 1\n"),
          expect=r"best_split\(m=\d+.*\) returned \d+ the first time and \d+ when asked again in another order: the answer must "
                 r"depend only on the arguments"),

    # 11.2: which thread reads which float
    Wrong('11.2', "side by side (the skeleton: step 3's float4 layout)",
          change=layout("row, j = divmod(thread, cols // 4)", "return row, 4 * j + load"),
          expect=TILE_B + r".*the warps' loads touch 528 sectors of 32 bytes, where 156 is the fewest a layout can keep wherever the rows "
                 r"start\. The worst: warp 1's load 0 \(threads 32\.\.63, each its load 0\) reads row 1, columns 0, 4, 8, \.\.\., 124 "
                 r"\(4 apart\): 32 floats in 17 sectors"),
    Wrong('11.2', "spread (B's layout, on every tile)",
          change=layout("row, j = divmod(thread, cols // 4)", "return row, j + load * (cols // 4)"),
          expect=r"tile_float on the 64 x 16 tile \(256 threads\).*touch 352 sectors of 32 bytes, where 184 is the fewest.*warp 0's "
                 r"load 0 \(threads 0\.\.31, each its load 0\) reads rows 0\.\.7, columns 0\.\.3 of each: 32 floats in 11 sectors"),
    Wrong('11.2', "down with groups of 16 threads (right for A's tiles of 16 columns only)",
          change=layout("group, j = divmod(thread, 16)", "return 4 * group + load, j"),
          expect=r"tile_float\(thread=32, load=0, rows=8, cols=128\) returned \(8, 0\), outside the 8 x 128 tile: rows run 0\.\.7"),
    Wrong('11.2', 'down with rows for cols',
          change=layout("group, j = divmod(thread, rows)", "return 4 * group + load, j"),
          expect=r"tile_float\(thread=16, load=0, rows=8, cols=128\) returned \(8, 0\), outside the 8 x 128 tile"),
    Wrong('11.2', '(col, row) returned',
          change=layout("group, j = divmod(thread, cols)", "return j, 4 * group + load"),
          expect=r"tile_float\(thread=8, load=0, rows=8, cols=128\) returned \(8, 0\), outside the 8 x 128 tile"),
    Wrong('11.2', 'a float row (/ for //)',
          change=layout("group, j = thread / cols, thread % cols", "return 4 * group + load, j"),
          expect=r"tile_float\(thread=0, load=0, rows=8, cols=128\) returned \(0\.0, 0\), a float: row and col are whole numbers"),
    Wrong('11.2', 'the row one too far (4 * group + load + 1)',
          change=layout("group, j = divmod(thread, cols)", "return 4 * group + load + 1, j"),
          expect=r"tile_float\(thread=128, load=3, rows=8, cols=128\) returned \(8, 0\), outside the 8 x 128 tile"),
    Wrong('11.2', 'the 4 loads one row apart, the groups too (group + load)',
          change=layout("group, j = divmod(thread, cols)", "return group + load, j"),
          expect=r"tile_float\(thread=0, load=1, rows=8, cols=128\) and tile_float\(thread=128, load=0, rows=8, cols=128\) both return "
                 r"\(1, 0\): two loads read the same float of the 8 x 128 tile, and then some float is read by none"),
    Wrong('11.2', 'threads down the columns (consecutive threads in consecutive rows)',
          change=layout("col4, row = divmod(thread, rows)", "return row, 4 * col4 + load"),
          expect=TILE_B + r".*touch 640 sectors.*warp 0's load 0 \(threads 0\.\.31, each its load 0\) reads rows 0\.\.7, columns 0, 4, 8 "
                 r"and 12 of each: 32 floats in 20 sectors"),
    Wrong('11.2', 'warp loads of 32 floats in a row, the warp counted without its 4 loads',
          change=layout("q = thread // 32 + load", "return divmod(32 * q + thread % 32, cols)"),
          expect=r"tile_float\(thread=0, load=1, rows=8, cols=128\) and tile_float\(thread=32, load=0, rows=8, cols=128\) both return "
                 r"\(0, 32\)"),
    Wrong('11.2', 'loads of 16 neighbours (a warp taken for 16 lanes)',
          change=layout("q = 4 * (thread // 16) + load", "return divmod(16 * q + thread % 16, cols)"),
          expect=TILE_B + r".*touch 184 sectors of 32 bytes, where 156 is the fewest.*reads row 1, columns 0\.\.15 and 64\.\.79: 32 floats "
                 r"in 6 sectors"),
    Wrong('11.2', 'each warp load 32 // cols whole rows (none where a row is longer than a warp)',
          change=layout("per_load, q = 32 // cols, 4 * (thread // 32) + load",
                        "return q * per_load + thread % 32 // cols, thread % cols"),
          expect=r"tile_float\(thread=0, load=0, rows=8, cols=128\) and tile_float\(thread=0, load=1, rows=8, cols=128\) both "
                 r"return \(0, 0\): two loads read the same float"),
    Wrong('11.2', 'spread where a row has 64 floats or more, down where fewer',
          change=layout("if cols >= 64:", "    row, j = divmod(thread, cols // 4)", "    return row, j + load * (cols // 4)",
                        "group, j = divmod(thread, cols)", "return 4 * group + load, j"),
          expect=r"tile_float on the 4 x 64 tile \(64 threads\).*touch 44 sectors of 32 bytes, where 38 is the fewest a layout can "
                 r"keep wherever the rows start\. The worst: warp 1's load 0 \(threads 32\.\.63, each its load 0\) reads rows 2 and 3, "
                 r"columns 0\.\.15 of each: 32 floats in 6 sectors"),
    Wrong('11.2', 'spread with 32 threads a row hard-coded',
          change=layout("row, j = divmod(thread, 32)", "return row, j + 32 * load"),
          expect=r"tile_float\(thread=0, load=1, rows=64, cols=16\) returned \(0, 32\), outside the 64 x 16 tile"),
    Wrong('11.2', 'no return',
          change=layout("group, j = divmod(thread, cols)", "row, col = 4 * group + load, j"),
          expect=r"tile_float\(thread=0, load=0, rows=8, cols=128\) returned None: end the function with `return row, col`"),
    Wrong('11.2', 'raises for tiles wider than a warp',
          change=layout("assert cols <= 32, 'a row wider than a warp'", "group, j = divmod(thread, cols)",
                        "return 4 * group + load, j"),
          expect=r"tile_float\(thread=0, load=0, rows=8, cols=128\) raised AssertionError at line \d+ of the `#\| exercise 11\.2` cell"),
    Wrong('11.2', 'ignores its arguments: counts its calls',
          change=(FLOAT_DEF, "CALLS = [0]\n\n\n" + FLOAT_DEF + "    CALLS[0] += 1\n    if CALLS[0] % 1000 == 0: return 0, 0\n"),
          expect=r"tile_float\(thread=\d+.*\) returned \(\d+, \d+\) the first time and \(0, 0\) when asked again in another order"),
]


RIGHT = [
    # 11.1
    Wrong('11.1', "course.waves.best_splits itself (the model's own choice, in floats)",
          change=split_returning("__import__('course.waves').waves.best_splits(m, k, n, bm, bn, sms, blocks_per_sm, bk)[0]"),
          expect=''),
    Wrong('11.1', "the counts from course.waves.plan, the time in flops",
          body="import course.waves\n\n\ndef best_split(m, k, n, bm, bn, bk, sms, blocks_per_sm):\n"
               "    def flops(s):\n"
               "        p = course.waves.plan(m, k, n, bm, bn, s, sms, blocks_per_sm, bk)\n"
               "        return p.waves * p.slots * 2 * bm * bn * p.k_per_unit + (80 * (2 * s + 1) * m * n if s > 1 else 0)\n"
               "    return min(range(1, min(16, -(-k // bk)) + 1), key=flops)\n",
          expect=''),
    Wrong('11.1', 'counted down from 16, keeping equals (<=)',
          body=solution_with('11.1', (PIECES, "    for pieces in reversed(range(1, min(16, cdiv(k, bk)) + 1)): "),
                             (KEEP, "        if best is None or flops <= best_flops:")),
          expect=''),
    Wrong('11.1', 'pieces beyond the steps of K priced too (never the fastest)',
          change=(PIECES, "    for pieces in range(1, 17): "),
          expect=''),
    Wrong('11.1', 'times in exact fractions of a second, min over (time, pieces)',
          body="from fractions import Fraction\n\n\ndef best_split(m, k, n, bm, bn, bk, sms, blocks_per_sm):\n"
               "    slots, tiles = sms * blocks_per_sm, -(-m // bm) * -(-n // bn)\n"
               "    def seconds(s):\n"
               "        work = -(-tiles * s // slots) * 2 * bm * bn * (-(-k // (s * bk)) * bk) / Fraction(67 * 10**12, slots)\n"
               "        return work + (Fraction((2 * s + 1) * m * n * 4, 335 * 10**10) if s > 1 else 0)\n"
               "    return min((seconds(s), s) for s in range(1, min(16, -(-k // bk)) + 1))[1]\n",
          expect=''),
    Wrong('11.1', 'a numpy integer',
          change=split_returning("__import__('numpy').int64(best)"),
          expect=''),

    # 11.2
    Wrong('11.2', 'each warp load 32 consecutive floats of the tile, row by row',
          change=layout("q = 4 * (thread // 32) + load", "return divmod(32 * q + thread % 32, cols)"),
          expect=''),
    Wrong('11.2', 'down, lanes reversed in each group',
          change=layout("group, j = divmod(thread, cols)", "return 4 * group + load, cols - 1 - j"),
          expect=''),
    Wrong('11.2', 'down, the loads in reverse order',
          change=layout("group, j = divmod(thread, cols)", "return 4 * group + 3 - load, j"),
          expect=''),
    Wrong('11.2', 'the 4 loads a quarter of the tile apart',
          change=layout("group, j = divmod(thread, cols)", "return group + load * (rows // 4), j"),
          expect=''),
    Wrong('11.2', 'the threads numbered backwards, numpy integers in a list',
          change=layout("np = __import__('numpy')", "group, j = divmod(rows * cols // 4 - 1 - thread, cols)",
                        "return [np.int64(4 * group + load), np.int32(j)]"),
          expect=''),
    Wrong('11.2', "spread where a row has 128 floats or more (B's), down where fewer (A's)",
          change=layout("if cols >= 128:", "    row, j = divmod(thread, cols // 4)", "    return row, j + load * (cols // 4)",
                        "group, j = divmod(thread, cols)", "return 4 * group + load, j"),
          expect=''),
]

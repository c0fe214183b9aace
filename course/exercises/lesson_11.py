"""The exercises of notebook 11: how many pieces of K the model of waves and split-K finds fastest, and which thread
reads which float of a tile whose rows do not start on 16 bytes. Both are checked on a CPU, against the course's
models: course/waves.py (tiles, units, waves, and the model's time of a split) and course/memory_access.py (the
32-byte sectors a warp's load touches)."""
import math, random

from ..memory_access import ELEMENTS_PER_SECTOR, SECTOR_BYTES, WARP_SIZE, sectors_touched
from ..waves import H100_FP32_TFLOPS, H100_HBM_TBPS, modeled_ms, partial_sums_bytes, plan
from .lesson_12 import ASK_AGAIN_SEED, whole_numbers
from .parts import NotYet, need_function, running
from .registry import exercise
from .watchdog import KernelTimeout

BATCH_BUDGET_S = 60      # seconds for one round of all the calls of a check (each call alone would have 15)


def answers_of(fn, name, keys, call_text, value_of):
    """{key: value_of(fn(*key), call_text(key))} for every key (a tuple of arguments), in order; then every key asked
    again in a shuffled order, where an answer that depends on the calls before it (a counter, a list used up call by
    call) rather than on its arguments gives itself away. The calls of a round run together under one watchdog (thousands
    of calls, each under its own, would take seconds); where one raises, the sentence names that call and its line."""
    def one_round(order):
        out, failed = {}, None
        with running(f"{name}, asked {len(order)} questions in a row", BATCH_BUDGET_S):
            for key in order:
                try: out[key] = fn(*key)
                except (KernelTimeout, KeyboardInterrupt): raise
                except BaseException as e:        # SystemExit too: named below, with its call
                    failed = key, e
                    break
        if failed:
            key, error = failed
            with running(call_text(key)): raise error
        return out
    first = one_round(keys)
    answers = {key: value_of(first[key], call_text(key)) for key in keys}
    again = list(keys)
    random.Random(ASK_AGAIN_SEED).shuffle(again)
    second = one_round(again)
    for key in again:
        value = value_of(second[key], call_text(key))
        if value != answers[key]:
            raise NotYet(f"{call_text(key)} returned {answers[key]} the first time and {value} when asked again in another "
                         f"order: the answer must depend only on the arguments (no counters or lists used up call by call)")
    return answers


def plural(count, word, words=None): return f"{count} {word if count == 1 else words or word + 's'}"


def and_list(items):
    "'a, b and c'."
    items = [str(i) for i in items]
    return ', '.join(items[:-1]) + ' and ' + items[-1] if len(items) > 1 else ''.join(items)


# --------------------------------------------------------------------------------------------------
# 11.1: how many pieces of K (the model of course/waves.py)
# --------------------------------------------------------------------------------------------------

MOST_PIECES = 16
FLOPS_PER_BYTE = round(H100_FP32_TFLOPS / H100_HBM_TBPS)    # 67 TFLOPS against 3.35 TB/s: 20 flops in a byte's time
assert FLOPS_PER_BYTE * H100_HBM_TBPS == H100_FP32_TFLOPS

# The problems asked about: the lesson's shape set, the eight shapes outside it, the small odd shape's neighbours,
# the course's awkward shapes, a few more of each kind, then random ones (the same in every run)
LESSON_SHAPES = ((256, 8192, 8192), (50000, 10, 1000), (777, 1234, 999), (4095, 4095, 4095), (1536, 1536, 1536),
                 (6000, 6000, 6000), (5120, 256, 5120), (4096, 4096, 4096),
                 (3001, 3001, 3001), (4097, 4097, 4097), (8190, 2050, 1030), (2500, 3000, 2000), (64, 6000, 3000),
                 (20000, 300, 500), (1000, 1000, 1000), (2047, 8191, 513), (768, 1232, 1024), (776, 1232, 1000))
OTHER_SHAPES = ((1, 1, 1), (33, 17, 31), (1000, 300, 700), (1, 300, 700), (1000, 300, 1), (129, 1021, 263),
                (256, 256, 256), (512, 512, 512), (64, 100000, 64), (8192, 8192, 8192), (100, 10000, 100),
                (16384, 64, 16384), (128, 4096, 8192), (8192, 4096, 128), (300, 20000, 200))
RANDOM_SHAPES, SHAPE_SEED = 40, 11
SPLIT_TILES = ((128, 128), (64, 128), (128, 64), (64, 64), (128, 256), (256, 128))
SPLIT_BK = (16, 8, 32)
# (multiprocessors, blocks per multiprocessor): an H100 with 1 to 3 blocks each, smaller GPUs, and a tiny one
GPUS = ((132, 2), (132, 1), (132, 3), (114, 2), (108, 4), (80, 1), (3, 2))
SKINNY = (256, 8192, 8192, 128, 128, 16, 132, 2)     # the lesson's: step 5's tiles, 2 blocks per multiprocessor


def split_shapes():
    rng = random.Random(SHAPE_SEED)
    drawn = [tuple(int(math.exp(rng.uniform(0, math.log(most)))) for most in (10000, 20000, 10000))
             for _ in range(RANDOM_SHAPES)]
    return [*LESSON_SHAPES, *OTHER_SHAPES, *drawn]


class SplitQuestion(tuple):
    "The arguments (m, k, n, bm, bn, bk, sms, blocks_per_sm) of one call of best_split, shown with their names."
    def __str__(self):
        return '(' + ', '.join(f"{name}={v}" for name, v in zip(('m', 'k', 'n', 'bm', 'bn', 'bk', 'sms', 'blocks_per_sm'), self)) + ')'


def split_questions():
    "Every problem asked about, the lesson's skinny problem first."
    keys = [SKINNY] + [(m, k, n, bm, bn, bk, sms, per_sm) for m, k, n in split_shapes() for bm, bn in SPLIT_TILES
                       for bk in SPLIT_BK for sms, per_sm in GPUS]
    return [SplitQuestion(key) for key in dict.fromkeys(keys)]


def allowed_pieces(key):
    "The numbers of pieces the model allows: 1 to 16, and no more than K has steps of bk."
    m, k, n, bm, bn, bk, sms, per_sm = key
    return range(1, min(MOST_PIECES, -(-k // bk)) + 1)


def split_plan(key, pieces):
    m, k, n, bm, bn, bk, sms, per_sm = key
    return plan(m, k, n, bm, bn, pieces, sms, per_sm, bk)


def model_flops(key, pieces):
    """The model's time of `pieces` pieces (modeled_ms), counted exactly, in flops at the peak rate: the waves'
    multiply-adds, plus 20 flops for each byte of the partial sums."""
    m, k, n, bm, bn, bk, sms, per_sm = key
    p = split_plan(key, pieces)
    return p.waves * p.slots * 2 * bm * bn * p.k_per_unit + FLOPS_PER_BYTE * partial_sums_bytes(pieces, m, n)


def fastest_split(key):
    "(pieces, flops) of the fewest pieces among those the model finds fastest."
    costs = {s: model_flops(key, s) for s in allowed_pieces(key)}
    best = min(costs, key=costs.get)      # the first of equals: the fewest pieces
    return best, costs[best]


def ms_text(x, digits=4): return f"{x:.{digits}g} ms"


def times_apart(a, b):
    "Two times in ms, with as many digits as it takes to tell them apart."
    for digits in range(4, 13):
        if ms_text(a, digits) != ms_text(b, digits): return ms_text(a, digits), ms_text(b, digits)
    return ms_text(a), ms_text(b)


def split_words(key, pieces, total):
    "What the model counts for `pieces` pieces, in words, its time `total` (as text) at the end."
    m, k, n, bm, bn, bk, sms, per_sm = key
    p = split_plan(key, pieces)
    work = 1e3 * p.waves * 2 * bm * bn * p.k_per_unit * p.slots / (H100_FP32_TFLOPS * 1e12)
    sums = (f" plus {ms_text(1e3 * partial_sums_bytes(pieces, m, n) / (H100_HBM_TBPS * 1e12))} for the partial sums "
            f"({2 * pieces + 1} x {m} x {n} floats through device memory)" if pieces > 1 else " and no partial sums")
    return (f"{p.tiles} tile{'s' if p.tiles > 1 else ''} x {plural(pieces, 'piece')} = {plural(p.units, 'unit')} on "
            f"{p.slots} slots ({sms} x {per_sm}) run in {plural(p.waves, 'wave')}, each as long as one unit's "
            f"{p.k_per_unit} of K ({plural(p.k_per_unit // bk, 'step')} of {bk}): {ms_text(work)} of multiply-adds{sums}, "
            f"{total} in all")


def split_sentence(name, key, pieces):
    "Why `pieces` is not the answer for `key`, from the model, or None where it is."
    best, best_flops = fastest_split(key)
    if pieces == best: return None
    call = f"{name}{key}"
    m, k, n, bm, bn, bk, sms, per_sm = key
    mine, theirs = (modeled_ms(split_plan(key, s), m, n, bm, bn) for s in (pieces, best))
    if model_flops(key, pieces) == best_flops:
        same = ms_text(mine)
        return (f"{call} returned {pieces}, which the model times as fast as {plural(best, 'piece')}, {same} each: with "
                f"{pieces}, {split_words(key, pieces, same)}; with {best}, {split_words(key, best, same)}. Where several "
                "numbers of pieces are as fast, the fewest is asked for")
    mine_text, best_text = times_apart(mine, theirs)
    return (f"{call} returned {pieces}: in the model (course.waves: plan, then modeled_ms), "
            f"{split_words(key, pieces, mine_text)}. The fastest is {plural(best, 'piece')}: "
            f"{split_words(key, best, best_text)}")


@exercise('11.1', 'how many pieces of K',
          hints=("For each number of pieces s that the model allows (1 to 16, and at most cdiv(k, bk)), count as it does: the "
                 "tiles (an edge tile counts whole: round up), the units (tiles x s), the waves (units over sms x "
                 "blocks_per_sm slots, rounded up) and the K of one unit (k / s, rounded up to whole steps of bk). The time "
                 "in flops is waves x slots x 2 x bm x bn x (K of one unit), plus 20 x (2s + 1) x m x n x 4 when s > 1. "
                 "Keep the smallest, and on equals the fewest pieces.",
                 "tiles = cdiv(m, bm) * cdiv(n, bn); for s in range(1, min(16, cdiv(k, bk)) + 1): waves = cdiv(tiles * s, "
                 "sms * blocks_per_sm); k_unit = cdiv(cdiv(k, s), bk) * bk; flops = waves * sms * blocks_per_sm * 2 * bm * "
                 "bn * k_unit, plus 20 * (2 * s + 1) * m * n * 4 if s > 1; keep s where flops < the best so far (`<`, not "
                 "`<=`, so that the fewest pieces stay among equals)."))
def pieces_of_k(ns, report):
    name = 'best_split'
    fn = need_function(ns, name, '(m, k, n, bm, bn, bk, sms, blocks_per_sm)')
    keys = split_questions()

    def value_of(value, call):
        if isinstance(value, (tuple, list)):
            raise NotYet(f"{call} returned {value!r} ({type(value).__name__}): return the number of pieces alone, one "
                         "whole number")
        return whole_numbers(value, call, ('pieces',))
    answers = answers_of(fn, name, keys, lambda key: f"{name}{key}", value_of)
    for key in keys:
        pieces, allowed = answers[key], allowed_pieces(key)
        m, k, n, bm, bn, bk, sms, per_sm = key
        if not 1 <= pieces <= MOST_PIECES:
            raise NotYet(f"{name}{key} returned {pieces}: K is cut into 1 to {MOST_PIECES} pieces (the lesson's tuner "
                         f"tries up to 16; 1 is no split)")
        if pieces > allowed[-1]:
            raise NotYet(f"{name}{key} returned {pieces}, but k = {k} makes only {plural(allowed[-1], 'step')} of bk = {bk}: "
                         f"a piece holds at least one whole step, so at most {allowed[-1]} "
                         f"piece{'s' if allowed[-1] > 1 else ''} (the model's plan refuses more)")
    report.ok(f"{name} returns a whole number of pieces, 1 to {MOST_PIECES} and no more than K's steps of bk, for each of "
              f"the {len(keys)} problems asked ({len(split_shapes())} shapes, {len(SPLIT_TILES)} tile sizes, bk = "
              f"{and_list(sorted(SPLIT_BK))}, {len(GPUS)} GPUs from {min(s for s, _ in GPUS)} to "
              f"{max(s for s, _ in GPUS)} multiprocessors), the same when asked again in another order")
    slower = [key for key in keys if model_flops(key, answers[key]) > fastest_split(key)[1]]
    for key in slower + keys:       # an answer the model times slower first, then one as fast with more pieces
        wrong = split_sentence(name, key, answers[key])
        if wrong: raise NotYet(wrong)
    m, k, n, bm, bn, bk, sms, per_sm = SKINNY
    report.ok(f"for all {len(keys)} it is the number of pieces the model finds fastest (course.waves: plan and modeled_ms), "
              f"the fewest among equals: {answers[SKINNY]} for the lesson's skinny problem, {m} x {k} @ {k} x {n} in "
              f"{bm} x {bn} tiles")


# --------------------------------------------------------------------------------------------------
# 11.2: which thread reads which float of an unaligned tile
# --------------------------------------------------------------------------------------------------

LOADS = 4                                     # floats a thread holds of the tile, one load each
WIDTHS = (4095, 4097, 1234, 1003)             # rows of the matrices the tiles lie in: none a multiple of 4 floats
FIRST_COLUMNS = range(ELEMENTS_PER_SECTOR)    # where the tile starts in its first row: every place in a sector
TILE_COLUMNS = (4, 8, 16, 32, 64, 128, 256)
BLOCK_THREADS = (32, 64, 128, 256, 512)
FIRST_TILES = ((8, 128), (64, 16))            # a tile of B and one of A, 256 threads each: asked first


def tile_shapes():
    """(rows, cols) of every tile asked about: cols 4 to 256, rows a multiple of 4, read by whole warps of 32 to 512
    threads, 4 floats a thread. A tile of B and one of A first."""
    shapes = [(4 * threads // cols, cols) for cols in TILE_COLUMNS for threads in BLOCK_THREADS
              if 4 * threads % cols == 0 and (4 * threads // cols) % 4 == 0]
    return list(FIRST_TILES) + [s for s in shapes if s not in FIRST_TILES]


def thread_count(rows, cols): return rows * cols // LOADS


class TileQuestion(tuple):
    "The arguments (thread, load, rows, cols) of one call of tile_float, shown with their names."
    def __str__(self):
        return '(' + ', '.join(f"{name}={v}" for name, v in zip(('thread', 'load', 'rows', 'cols'), self)) + ')'


def tile_questions(shapes):
    return [TileQuestion((thread, load, rows, cols)) for rows, cols in shapes
            for thread in range(thread_count(rows, cols)) for load in range(LOADS)]


def reference_float(thread, load, rows, cols):
    "The lesson's `down` layout (Four::down): cols threads share 4 rows, thread j of them reads column j of each."
    group, j = divmod(thread, cols)
    return LOADS * group + load, j


def warp_loads(table, rows, cols):
    "{(warp, load): [(row, col) of each lane, in lane order]} of a layout `table` {(thread, load): (row, col)}."
    return {(warp, load): [table[warp * WARP_SIZE + lane, load] for lane in range(WARP_SIZE)]
            for warp in range(thread_count(rows, cols) // WARP_SIZE) for load in range(LOADS)}


def load_sectors(cells, width, first_column):
    "The 32-byte sectors a warp load of `cells` touches, the tile's first row at row 0, first column at first_column."
    return sectors_touched([r * width + first_column + c for r, c in cells])


def total_sectors(loads, width, first_column):
    return sum(load_sectors(cells, width, first_column) for cells in loads.values())


def runs_text(numbers, word):
    "'columns 0..15 and 64..79', 'columns 0, 4, 8, ..., 124', 'rows 0, 4 and 9'."
    numbers = sorted(set(numbers))
    if len(numbers) == 1: return f"{word} {numbers[0]}"
    words = word + 's'
    steps = {b - a for a, b in zip(numbers, numbers[1:])}
    if steps == {1} and len(numbers) > 2: return f"{words} {numbers[0]}..{numbers[-1]}"
    if len(steps) == 1 and len(numbers) > 4:
        d = steps.pop()
        return f"{words} {numbers[0]}, {numbers[1]}, {numbers[2]}, ..., {numbers[-1]} ({d} apart)"
    runs, start = [], numbers[0]
    for a, b in zip(numbers, numbers[1:] + [None]):
        if b != a + 1:
            runs += [f"{start}..{a}"] if a > start + 1 else [str(i) for i in range(start, a + 1)]
            start = b
    if len(runs) > 4: return f"{words} {', '.join(runs[:3])}, ... ({len(numbers)} in all)"
    return f"{words} {and_list(runs)}"


def floats_in_words(cells):
    "Where a warp load's 32 floats lie in the tile, in words: 'row 0, columns 0, 4, 8, ..., 124 (4 apart)'."
    by_row = {}
    for r, c in cells: by_row.setdefault(r, []).append(c)
    patterns = {runs_text(cols, 'column') for cols in by_row.values()}
    if len(by_row) == 1 or len(patterns) > 1 and len(by_row) <= 2:
        return '; '.join(f"row {r}, {runs_text(cols, 'column')}" for r, cols in sorted(by_row.items()))
    if len(patterns) == 1:
        return f"{runs_text(by_row, 'row')}, {patterns.pop()} of each"
    return f"{runs_text(by_row, 'row')}, {', '.join(str(len(cols)) for _, cols in sorted(by_row.items()))} floats of each"


def worst_load(loads, width, first_column):
    """(warp, load, sectors) of the warp load that touches the most sectors beyond the fewest its floats fill (8 floats
    of one row to a sector), the first of equals."""
    def excess(item):
        (warp, load), cells = item
        rows = {}
        for r, _ in cells: rows[r] = rows.get(r, 0) + 1
        return load_sectors(cells, width, first_column) - sum(-(-n // ELEMENTS_PER_SECTOR) for n in rows.values())
    (warp, load), cells = max(sorted(loads.items()), key=excess)
    return warp, load, load_sectors(cells, width, first_column)


def cover_problem(name, table, rows, cols):
    "The sentence for two loads of the same float of a rows x cols tile (and one never read), or None."
    seen, read = {}, set(table.values())
    for (thread, load), cell in table.items():
        if cell in seen:
            (t1, l1), r, c = seen[cell], *cell
            unread = next((i, j) for i in range(rows) for j in range(cols) if (i, j) not in read)
            return (f"{name}{TileQuestion((t1, l1, rows, cols))} and {name}{TileQuestion((thread, load, rows, cols))} both "
                    f"return ({r}, {c}): two loads read the same float of the {rows} x {cols} tile, and then some float is "
                    f"read by none (({unread[0]}, {unread[1]}) is never read). The {thread_count(rows, cols)} threads x "
                    f"{LOADS} loads must read the tile's {rows * cols} floats once each")
        seen[cell] = (thread, load)
    return None


def sector_problem(name, table, rows, cols):
    "The sentence for the first row start where the warps' loads of a rows x cols tile touch more sectors than the fewest."
    mine = warp_loads(table, rows, cols)
    fewest = warp_loads({key[:2]: reference_float(*key) for key in tile_questions([(rows, cols)])}, rows, cols)
    for width in WIDTHS:
        for first_column in FIRST_COLUMNS:
            got, least = total_sectors(mine, width, first_column), total_sectors(fewest, width, first_column)
            if got <= least: continue
            warp, load, sectors = worst_load(mine, width, first_column)
            first = warp * WARP_SIZE
            return (f"{name} on the {rows} x {cols} tile ({thread_count(rows, cols)} threads), in a matrix whose rows are "
                    f"{width} floats long (not a multiple of 4: its rows start at different places in their sectors), the "
                    f"tile's first column at {first_column}: the warps' "
                    f"loads touch {got} sectors of {SECTOR_BYTES} bytes, where {least} is the fewest a layout can keep "
                    f"wherever the rows start. The worst: warp {warp}'s load {load} (threads {first}..{first + WARP_SIZE - 1}, "
                    f"each its load {load}) reads {floats_in_words(mine[warp, load])}: 32 floats in {sectors} sectors")
    return None


@exercise('11.2', 'which thread reads which float',
          hints=("A sector that two loads of a warp touch is served twice. Let neighbouring lanes read neighbouring floats "
                 "of one row, and keep each row's floats together: a row of 32 floats or fewer whole in one warp load, a "
                 "longer row in pieces of 32 neighbours that start at a multiple of 32. The lesson's `down` layout does "
                 "both, for every width asked here.",
                 "Down: `group, j = divmod(thread, cols)`, then `(4 * group + load, j)`: cols threads share 4 rows, one row "
                 "per load. Or number the tile's floats row by row and let warp load q = 4 * (thread // 32) + load read "
                 "floats 32q to 32q + 31: `divmod(32 * q + thread % 32, cols)`."))
def unaligned_tile_loads(ns, report):
    name = 'tile_float'
    fn = need_function(ns, name, '(thread, load, rows, cols)')
    shapes = tile_shapes()
    keys = tile_questions(shapes)

    def value_of(value, call):
        return whole_numbers(value, call, ('row', 'col'))
    answers = answers_of(fn, name, keys, lambda key: f"{name}{key}", value_of)
    for key in keys:
        thread, load, rows, cols = key
        r, c = answers[key]
        if not (0 <= r < rows and 0 <= c < cols):
            raise NotYet(f"{name}{key} returned ({r}, {c}), outside the {rows} x {cols} tile: rows run 0..{rows - 1} and "
                         f"columns 0..{cols - 1}")
    tables = {(rows, cols): {key[:2]: answers[key] for key in tile_questions([(rows, cols)])} for rows, cols in shapes}
    for (rows, cols), table in tables.items():
        problem = cover_problem(name, table, rows, cols)
        if problem: raise NotYet(problem)
    report.ok(f"{name} returns a (row, col) inside the tile for every thread and load of {len(shapes)} tile shapes (rows "
              f"of {and_list(TILE_COLUMNS)} floats, {min(BLOCK_THREADS)} to {max(BLOCK_THREADS)} threads), each float of "
              "each tile read once, the same when asked again in another order")
    for (rows, cols), table in tables.items():
        problem = sector_problem(name, table, rows, cols)
        if problem: raise NotYet(problem)
    examples = [(rows, cols, total_sectors(warp_loads(tables[rows, cols], rows, cols), WIDTHS[0], 3)) for rows, cols in FIRST_TILES]
    report.ok(f"in matrices whose rows are {and_list(WIDTHS)} floats long, the tile's first column at 0 to "
              f"{FIRST_COLUMNS[-1]}, the warps' loads of every tile touch the fewest sectors of {SECTOR_BYTES} bytes a layout "
              f"can keep wherever the rows start (course.memory_access.sectors_touched): on rows of {WIDTHS[0]} from "
              f"column 3, " + ' and '.join(f"{n} for the {r} x {c} tile" for r, c, n in examples))

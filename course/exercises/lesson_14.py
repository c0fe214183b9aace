"""The exercises of notebook 14: how many rounds a product's units take on the GPU (section 1), and where each of a
thread's accumulators goes in C in the TF32 kernel (section 7), which computes C's transpose. Both are checked on a
CPU: the first against the count played out tile by tile, the second by computing a tile the kernel's way and storing
it with the learner's places (course.hopper_tf32.simulate_tile), then against PTX's accumulator layout."""
from .lesson_12 import asked_twice, whole_numbers
from .parts import NotYet, need_function, running
from .registry import exercise

# (h, w, tile_rows, tile_cols, at_once): square and ragged products, few rows, tiles wider than the product, a
# product of one tile, counts of units just past a whole number of rounds, small GPUs with tiles of another shape
ROUND_QUESTIONS = [(4096, 4096, 256, 256, 66), (3072, 3072, 256, 256, 66), (128, 8192, 256, 256, 66),
                   (5000, 4000, 256, 256, 66), (5000, 4000, 128, 192, 132), (64, 8192, 64, 128, 132), (1, 1, 128, 256, 66),
                   (8192, 256, 128, 256, 132), (256, 8192, 128, 128, 132), (3000, 40, 128, 256, 66), (33, 31, 64, 128, 132),
                   (4224, 4096, 128, 128, 132), (16384, 6144, 256, 256, 66), (300, 4000, 128, 192, 132),
                   (129, 257, 128, 128, 3), (100, 1000, 64, 256, 3)]


def units_played_out(h, w, rows, cols):
    "The units of an h x w product, counted tile by tile: a tile for every tile_rows x tile_cols piece that holds any of C."
    return sum(1 for r in range(0, h, rows) for c in range(0, w, cols))


def rounds_played_out(h, w, rows, cols, at_once):
    "The rounds: the units handed out at_once at a time until none is left."
    units, count = units_played_out(h, w, rows, cols), 0
    while units > 0: units, count = units - at_once, count + 1
    return count


@exercise('14.1', "rounds of units",
          hints=("First count the units: the tiles it takes to cover h rows (a tile that holds even one row counts) times "
                 "those it takes to cover w columns. Then the rounds: units handed out at_once at a time.",
                 "Both counts round up: -(-h // tile_rows) is h / tile_rows rounded up, in whole numbers. rounds = "
                 "-(-units // at_once)."))
def rounds_of_units(ns, report):
    fn = need_function(ns, 'rounds', '(h, w, tile_rows, tile_cols, at_once)')

    def ask(key):
        call = f"rounds(h={key[0]}, w={key[1]}, tile_rows={key[2]}, tile_cols={key[3]}, at_once={key[4]})"
        with running(call): value = fn(*key)
        return whole_numbers(value, call, ('the rounds',))
    answers = asked_twice(ROUND_QUESTIONS, ask, 'rounds')
    report.ok(f"rounds returns a whole number for {len(ROUND_QUESTIONS)} products, the same when asked again")
    for key, got in answers.items():
        h, w, rows, cols, at_once = key
        units, right = units_played_out(h, w, rows, cols), rounds_played_out(*key)
        if got == right: continue
        where = f"rounds(h={h}, w={w}, tile_rows={rows}, tile_cols={cols}, at_once={at_once}) returned {got}"
        floor_tiles = (h // rows) * (w // cols)
        if got == rounds_played_out(h, w, cols, rows, at_once):
            raise NotYet(f"{where}, not {right}: that is the count with the tile turned round; tile_rows goes down C's "
                         f"h rows and tile_cols across its w columns ({units} units)")
        if got == -(-(h * w) // (rows * cols * at_once)):
            raise NotYet(f"{where}, not {right}: dividing the areas counts parts of tiles; count whole tiles down and "
                         f"across first ({units} units)")
        if got == -(-floor_tiles // at_once) or got == floor_tiles // at_once and floor_tiles != units:
            raise NotYet(f"{where}, not {right}: a tile that covers only part of C's rows or columns is still a tile "
                         f"(the kernel runs it, its copies filled with zeros), so there are {units} units, not {floor_tiles}")
        if got == units // at_once:
            raise NotYet(f"{where}, not {right}: {units} units on {at_once} clusters leave {units % at_once} for one more "
                         "round, which takes a whole round's time however few units it holds")
        raise NotYet(f"{where}, not {right}: the product has {units} units of {rows} x {cols}, handed out {at_once} at "
                     f"a time")
    report.ok("each, the rounds the product's units take when the GPU runs at_once of them at a time")


C_ROWS = 128         # the tile's rows in the check (wgmma's n): j runs over 128 / 8 = 16 groups of accumulators


@exercise('14.2', "where a thread's results go in C (TF32 wgmma)",
          hints=("The accumulators hold D = C^T, laid out as PTX lays out any wgmma's D: d[4j + r] of a lane of warp 0 is "
                 "D's element (row, 8j + column) with (row, column) = element(M16N8K8, 'c', lane, r). A row of C^T is a "
                 "column of C, a column of C^T is a row of C.",
                 "With g = lane // 4 and t = lane % 4, d[4j + r] is D's (g + 8 (r // 2), 8j + 2t + r % 2). So in C: row "
                 "8 * j + 2 * t + r % 2, column g + 8 * (r // 2)."))
def c_fragment_places(ns, report):
    import numpy as np
    from ..hopper_tf32 import simulate_tile
    from ..tensor_core_fragments import M16N8K8, element
    fn = need_function(ns, 'c_place', '(lane, j, r)')

    def ask(key):
        call = f"c_place(lane={key[0]}, j={key[1]}, r={key[2]})"
        with running(call): value = fn(*key)
        return whole_numbers(value, call, ('row', 'column'))
    places = asked_twice([(lane, j, r) for lane in range(32) for j in range(C_ROWS // 8) for r in range(4)], ask, 'c_place')
    def in_d(lane, j, r):
        "Where d[4j + r] of `lane` sits in D = C^T (PTX's accumulator layout)."
        d_row, d_col = element(M16N8K8, 'c', lane, r)
        return d_row, 8 * j + d_col
    for (lane, j, r), (row, col) in places.items():
        d_row, d_col = in_d(lane, j, r)
        if (row, col) == (d_row, d_col) != (d_col, d_row):      # D's place, where C's is D's turned round
            raise NotYet(f"c_place(lane={lane}, j={j}, r={r}) returned ({row}, {col}): that is where d[{4 * j + r}] sits "
                         "in D, which is C^T; a row of C^T is a column of C")
        if not (0 <= row < C_ROWS and 0 <= col < 16):
            raise NotYet(f"c_place(lane={lane}, j={j}, r={r}) returned ({row}, {col}): warp 0 of a consumer stores into "
                         f"rows 0..{C_ROWS - 1} (the tile's rows) and columns 0..15 (its 16 columns of C)")
    seen = {}
    for key, place in places.items():
        if place in seen:
            a, b = seen[place], key
            raise NotYet(f"c_place sends d[{4 * a[1] + a[2]}] of lane {a[0]} and d[{4 * b[1] + b[2]}] of lane {b[0]} to the "
                         f"same element of C, {place}: the warp's accumulators must cover its {C_ROWS} x 16 block once each")
        seen[place] = key
    report.ok(f"c_place gives each of warp 0's accumulators its own element of its {C_ROWS} x 16 block of C")
    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((C_ROWS, 16)), rng.standard_normal((16, 128))
    if np.allclose(simulate_tile(a, b, store=lambda lane, j, r: places[lane, j, r]), a @ b):
        report.ok("a tile computed the kernel's way and stored with your places is A B")
        return
    for (lane, j, r), (row, col) in places.items():
        d_row, d_col = in_d(lane, j, r)
        if (row, col) != (d_col, d_row):
            raise NotYet(f"c_place(lane={lane}, j={j}, r={r}) returned ({row}, {col}), but d[{4 * j + r}] of lane {lane} "
                         f"holds D's element ({d_row}, {d_col}) (PTX's accumulator layout), and D is C^T")

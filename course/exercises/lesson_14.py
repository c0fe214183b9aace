"""The exercises of notebook 14: how many rounds a product's units take on the GPU (section 1), and where each of a
warp's registers of B goes in the TF32 kernel (section 7). Both are checked on a CPU: the first against the count
played out tile by tile, the second by computing a tile the kernel's way with the learner's places
(course.hopper_tf32.simulate_tile) and against PTX's fragment layout."""
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


def _b_places(fn):
    "{(lane, r): (k, n)} from the learner's `b_place`, every answer a pair of ints."
    places = {}
    for lane in range(32):
        for r in range(4):
            call = f"b_place(lane={lane}, r={r})"
            with running(call): value = fn(lane, r)
            places[lane, r] = whole_numbers(value, call, ('k', 'n'))
    return places


@exercise('14.2', "where a thread's values of B go (TF32 wgmma)",
          hints=("wgmma reads register a_r of a lane as one element of the warp's 16 x 8 piece of B^T: notebook 12's "
                 "m16n8k8 A fragment, `element(M16N8K8, 'a', lane, r)` gives its (row, column). A row of B^T is a "
                 "column n of C; a column of B^T is a k. So the value to load is B at (k = that column, n = that row).",
                 "With g = lane // 4 and t = lane % 4: a0 is B^T's (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4). "
                 "So k = t + 4 * (r // 2) and n = g + 8 * (r % 2)."))
def b_fragment_places(ns, report):
    import numpy as np
    from ..hopper_tf32 import simulate_tile
    from ..tensor_core_fragments import M16N8K8, element
    fn = need_function(ns, 'b_place', '(lane, r)')
    places = _b_places(fn)
    again = _b_places(fn)
    if again != places:
        raise NotYet("b_place returned different answers when asked again: the place must depend only on lane and r")
    for (lane, r), (k, n) in places.items():
        if not (0 <= k < 8 and 0 <= n < 16):
            raise NotYet(f"b_place(lane={lane}, r={r}) returned ({k}, {n}): a warp's piece of B has k in 0..7 and n in "
                         "0..15 (8 of K, 16 columns of C)")
    seen = {}
    for key, place in places.items():
        if place in seen:
            raise NotYet(f"b_place sends lane {seen[place][0]}'s a{seen[place][1]} and lane {key[0]}'s a{key[1]} to the "
                         f"same value of B, (k, n) = {place}: the warp's 32 x 4 registers must hold its 8 x 16 values once each")
        seen[place] = key
    report.ok("b_place gives each of a warp's 128 registers its own value of the warp's 8 x 16 piece of B")
    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((128, 16)), rng.standard_normal((16, 128))
    if np.allclose(simulate_tile(a, b, place=lambda lane, r: places[lane, r]), a @ b): 
        report.ok("a tile computed the kernel's way, with your places, is A B")
        return
    for (lane, r), (k, n) in places.items():
        row, col = element(M16N8K8, 'a', lane, r)
        if (k, n) != (col, row):
            raise NotYet(f"b_place(lane={lane}, r={r}) returned (k, n) = ({k}, {n}), but wgmma reads register a{r} of lane "
                         f"{lane} as row {row}, column {col} of the warp's piece of B^T: a row of B^T is a column n of C, "
                         "a column is a k, so the tile computed with your places is not A B")

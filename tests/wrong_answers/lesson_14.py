"""Wrong answers for notebook 14's exercises (the rounds of a product's units, where a thread's accumulators go in C in
the TF32 kernel), and right answers written unusually."""
from . import Wrong

UNITS = "    units = -(-h // tile_rows) * -(-w // tile_cols) "
ROUNDS = "    return -(-units // at_once) "
PLACE = "    return 8 * j + 2 * t + r % 2, g + 8 * (r // 2) "

WRONG = [
    Wrong('14.1', "tiles rounded down", change=(UNITS, "    units = (h // tile_rows) * (w // tile_cols) "),
          expect=r"a tile that covers only part of C's rows or columns is still a tile"),
    Wrong('14.1', "the last round dropped", change=(ROUNDS, "    return units // at_once "),
          expect=r"leave \d+ for one more round, which takes a whole round's time"),
    Wrong('14.1', "areas divided", body="def rounds(h, w, tile_rows, tile_cols, at_once):\n"
                                        "    return -(-(h * w) // (tile_rows * tile_cols * at_once))\n",
          expect=r"dividing the areas counts parts of tiles"),
    Wrong('14.1', "a float", change=(ROUNDS, "    return units / at_once "),
          expect=r"a float: the rounds is a whole number"),
    Wrong('14.1', "rows and columns swapped", change=(UNITS, "    units = -(-h // tile_cols) * -(-w // tile_rows) "),
          expect=r"the count with the tile turned round; tile_rows goes down C's h rows"),
    Wrong('14.2', "D's place, not turned round", change=(PLACE, "    return g + 8 * (r // 2), 8 * j + 2 * t + r % 2 "),
          expect=r"that is where d\[\d+\] sits in D, which is C\^T; a row of C\^T is a column of C"),
    Wrong('14.2', "the two rows of a pair swapped with the columns", change=(PLACE, "    return 8 * j + 2 * t + r // 2, g + 8 * (r % 2) "),
          expect=r"holds D's element \(\d+, \d+\) \(PTX's accumulator layout\), and D is C\^T"),
    Wrong('14.2', "j forgotten", change=(PLACE, "    return 2 * t + r % 2, g + 8 * (r // 2) "),
          expect=r"to the same element of C"),
    Wrong('14.2', "columns past the warp's 16", change=(PLACE, "    return 8 * j + 2 * t + r % 2, g + 16 * (r // 2) "),
          expect=r"returned \(\d+, 16\): warp 0 of a consumer stores into rows 0..127"),
    Wrong('14.2', "a float", change=(PLACE, "    return 8 * j + 2 * t + r % 2, g + 8 * (r / 2) "),
          expect=r"a float: row and column are whole numbers"),
]

RIGHT = [
    Wrong('14.1', "math.ceil on exact ints", expect='',
          body="import math\ndef rounds(h, w, tile_rows, tile_cols, at_once):\n"
               "    units = math.ceil(h / tile_rows) * math.ceil(w / tile_cols)\n    return math.ceil(units / at_once)\n"),
    Wrong('14.2', "with bit operations", expect='',
          body="def c_place(lane, j, r):\n    return j << 3 | (lane & 3) << 1 | r & 1, lane >> 2 | (r & 2) << 2\n"),
]

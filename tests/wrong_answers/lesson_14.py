"""Wrong answers for notebook 14's exercises (the rounds of a product's units, where a thread's values of B go in the
TF32 kernel), and right answers written unusually."""
from . import Wrong

UNITS = "    units = -(-h // tile_rows) * -(-w // tile_cols) "
ROUNDS = "    return -(-units // at_once) "
PLACE = "    return t + 4 * (r // 2), g + 8 * (r % 2) "

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
    Wrong('14.2', "k and n swapped", change=(PLACE, "    return g + 8 * (r % 2), t + 4 * (r // 2) "),
          expect=r"returned \(\d+, \d+\): a warp's piece of B has k in 0..7 and n in 0..15"),
    Wrong('14.2', "the k halves swapped", change=(PLACE, "    return t + 4 * (r % 2), g + 8 * (r // 2) "),
          expect=r"wgmma reads register a1 of lane 0 as row 8, column 0 of the warp's piece of B\^T"),
    Wrong('14.2', "g and t swapped", body="def b_place(lane, r):\n    g, t = lane % 8, lane // 8\n"
                                          "    return t + 4 * (r // 2), g + 8 * (r % 2)\n",
          expect=r"wgmma reads register a0 of lane 1 as row 0, column 1 of the warp's piece of B\^T"),
    Wrong('14.2', "every register of a lane on one value", change=(PLACE, "    return t, g "),
          expect=r"to the same value of B, \(k, n\) = \(0, 0\)"),
    Wrong('14.2', "a list of floats", change=(PLACE, "    return [float(t + 4 * (r // 2)), float(g + 8 * (r % 2))] "),
          expect=r"a float: k and n are whole numbers"),
]

RIGHT = [
    Wrong('14.1', "math.ceil on exact ints", expect='',
          body="import math\ndef rounds(h, w, tile_rows, tile_cols, at_once):\n"
               "    units = math.ceil(h / tile_rows) * math.ceil(w / tile_cols)\n    return math.ceil(units / at_once)\n"),
    Wrong('14.2', "with bit operations", expect='',
          body="def b_place(lane, r):\n    return (lane & 3) | (r & 2) << 1, (lane >> 2) | (r & 1) << 3\n"),
]

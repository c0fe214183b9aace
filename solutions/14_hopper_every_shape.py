"Reference solutions of notebooks/exercises/14_hopper_every_shape.ipynb. Try the exercises first!"

# Exercise 14.1: rounds of units
def rounds(h, w, tile_rows, tile_cols, at_once):
    "The rounds an h x w product's units take on a GPU that runs `at_once` of them at a time."
    units = -(-h // tile_rows) * -(-w // tile_cols)     # a tile that holds any of C counts
    return -(-units // at_once)                         # the last round, however few units it holds


# Exercise 14.2: where a thread's results go in C (TF32 wgmma)
def c_place(lane, j, r):
    "(row, column) in C, from the tile's first row and warp 0's first column, of accumulator d[4j + r] of `lane`."
    g, t = lane // 4, lane % 4
    return 8 * j + 2 * t + r % 2, g + 8 * (r // 2)     # D = C^T's (g + 8 (r // 2), 8j + 2t + r % 2), turned round

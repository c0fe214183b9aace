"Reference solutions of notebooks/exercises/14_hopper_every_shape.ipynb. Try the exercises first!"

# Exercise 14.1: rounds of units
def rounds(h, w, tile_rows, tile_cols, at_once):
    "The rounds an h x w product's units take on a GPU that runs `at_once` of them at a time."
    units = -(-h // tile_rows) * -(-w // tile_cols)     # a tile that holds any of C counts
    return -(-units // at_once)                         # the last round, however few units it holds


# Exercise 14.2: where a thread's values of B go (TF32 wgmma)
def b_place(lane, r):
    "(k, n) in a warp's 8 x 16 piece of B (8 of K, 16 columns of C) of register a_r of `lane`."
    g, t = lane // 4, lane % 4
    return t + 4 * (r // 2), g + 8 * (r % 2)            # B^T's (row g or g + 8, column t or t + 4)

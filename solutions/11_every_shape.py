"Reference solutions of notebooks/exercises/11_every_shape.ipynb. Try the exercises first!"
from utils import cdiv                          # the lecture's ceiling division (the setup cell imports it too)

# Exercise 11.1: how many pieces of K
# The model of course/waves.py: m x k @ k x n in bm x bn tiles, K in steps of bk, sms multiprocessors x blocks_per_sm slots.
FLOPS_PER_BYTE = 20                             # 67 TFLOPS of fp32 against 3.35 TB/s: 20 flops in the time of one byte


def best_split(m, k, n, bm, bn, bk, sms, blocks_per_sm):
    "The number of pieces of K (1 to 16) that the model finds fastest; the fewest where several are as fast."
    tiles, slots = cdiv(m, bm) * cdiv(n, bn), sms * blocks_per_sm    # an edge tile costs a whole tile
    best, best_flops = None, None
    for pieces in range(1, min(16, cdiv(k, bk)) + 1):              # every piece holds at least one step of bk
        waves = cdiv(tiles * pieces, slots)                         # units over slots, the last wave counted whole
        k_unit = cdiv(cdiv(k, pieces), bk) * bk                     # the K of one unit, in whole steps of bk
        flops = waves * slots * 2 * bm * bn * k_unit                # each wave as long as one unit, at a slot's share
        if pieces > 1:                                              # each partial tile written and read, then C written
            flops += FLOPS_PER_BYTE * (2 * pieces + 1) * m * n * 4
        if best is None or flops < best_flops:                      # `<`: among equals, the fewest pieces stay
            best, best_flops = pieces, flops
    return best


# Exercise 11.2: which thread reads which float
def tile_float(thread, load, rows, cols):
    "(row, col) of the rows x cols tile that thread `thread` reads in its load `load` (0..3): 4 floats a thread."
    group, j = divmod(thread, cols)             # down (Four::down): cols threads share 4 rows, thread j reads column j
    return 4 * group + load, j                  # a warp load: whole rows (cols <= 32) or 32 neighbours of one row

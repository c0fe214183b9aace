"Reference solutions of notebooks/exercises/13_hopper.ipynb. Try the exercises first!"

# Exercise 13.1: how many bytes does full[s] expect
def expected_bytes(bm, bn, bk, cluster_blocks, element_bytes=2):
    "The bytes one block's producer passes to arrive.expect_tx on full[s]: all the bytes that land in this block's stage."
    a_tile = bm * bk                            # this block's rows of A: copied by its own producer, into this block only
    b_tile = bk * bn                            # all of B's tile lands here: 1/cluster_blocks of its boxes from each producer
    return (a_tile + b_tile) * element_bytes    # cluster_blocks changes who copies B's boxes, not how many bytes land here


# Exercise 13.2: point wgmma at B
def b_strides(bk):
    "(LBO, SBO) in bytes for the MN-major descriptor of B's stage: boxes of 64 columns (128 bytes) x bk rows, one after another."
    row_bytes = 128                             # one row of a box: 64 bf16 columns, the width of the 128-byte swizzle
    leading = bk * row_bytes                    # LBO: from one box of 64 columns to the next, a whole box further
    stride = 8 * row_bytes                      # SBO: from one group of 8 rows of K to the next, inside a box
    return leading, stride


# Exercise 13.3: deal out a stretch (stream-K)
def stretch_pieces(start, end, k_tiles, first_unit):
    "The pieces of the stretch [start, end) of the last round's stages, in order: (unit, k_begin, k_end, role)."
    pieces, at = [], start
    while at < end:
        unit, k_begin = first_unit + at // k_tiles, at % k_tiles     # where stage `at` of the last round lies
        k_end = min(k_tiles, k_begin + end - at)                     # to the unit's end or the stretch's, the nearer
        role = 'contributor' if k_begin > 0 else 'finisher' if k_end < k_tiles else 'whole'
        pieces.append((unit, k_begin, k_end, role))
        at += k_end - k_begin
    return pieces

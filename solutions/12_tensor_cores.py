"Reference solutions of notebooks/exercises/12_tensor_cores.ipynb. Try the exercises first!"

# Exercise 12.1: which lane holds which element
def c_fragment_element(lane, i):
    "The worked example: (row, col) of C (16 x 8) that element i (0..3) of lane `lane` holds."
    group, thread = lane >> 2, lane % 4        # groupID and threadID_in_group
    row = group + 8 * (i >= 2)                  # elements 0, 1: row `group`; elements 2, 3: 8 rows further down
    col = thread * 2 + i % 2                    # two neighbours: columns 2*thread and 2*thread + 1
    return row, col


def a_fragment_element(lane, i):
    "(row, col) of A (16 x 16, rows m, columns k) that element i (0..7) of lane `lane` holds."
    group, thread = lane >> 2, lane % 4
    row = group + 8 * (i % 4 >= 2)              # elements 2, 3 and 6, 7: 8 rows further down
    col = thread * 2 + i % 2 + 8 * (i >= 4)     # elements 4 to 7: the same pattern in A's right half, k = 8..15
    return row, col


# Exercise 12.2: swizzle away the bank conflicts
def swizzle(row, chunk):
    "The place (0..7) in its row where chunk `chunk` (16 bytes) of row `row` of a 128-byte-row tile is stored."
    return chunk ^ (row % 8)                    # 8 consecutive rows: 8 different places for one chunk

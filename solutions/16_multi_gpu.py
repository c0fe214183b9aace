"Reference solutions of notebooks/exercises/16_multi_gpu.ipynb. Try the exercises first!"

# Exercise 16.1: whose rows are here
def ring_owner(rank, hop, size):
    "Whose rows of X GPU `rank` holds (and multiplies) at hop `hop` of the column-parallel ring of `size` GPUs."
    return (rank - hop) % size                  # one GPU back per hop: each receives from rank - 1


# Exercise 16.2: which rows to multiply (row-parallel ring)
def row_block(rank, hop, size):
    "Which block of rows GPU `rank` multiplies (and adds the received sums to) at hop `hop` of the row-parallel ring."
    return (rank - hop - 1) % size              # the rows it passes on next; at the last hop, its own

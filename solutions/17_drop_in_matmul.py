"Reference solutions of notebooks/exercises/17_drop_in_matmul.ipynb. Try the exercises first!"

# Exercise 17.1: row-major, column-major, or a copy
def how_it_lies(shape, strides):
    "'rows' where the matrix is row-major, 'columns' where column-major (a .T of a row-major one), None where neither."
    (rows, cols), (row_step, col_step) = shape, strides
    if (col_step == 1 or cols == 1) and (row_step == cols or rows == 1): return 'rows'     # a dimension of 1: any stride
    if (row_step == 1 or rows == 1) and (col_step == rows or cols == 1): return 'columns'
    return None


# Exercise 17.2: where the kernel reads an element
def element_offset(entry, r, c, rows, cols, transposed, batch_stride):
    "Floats from entry 0's first element to element (r, c) of entry `entry` (rows x cols as used; stored transposed or not)."
    inside = c * rows + r if transposed else r * cols + c      # stored transposed: a cols x rows row-major matrix
    return entry * batch_stride + inside

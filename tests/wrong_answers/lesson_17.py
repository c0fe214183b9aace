"""Wrong answers for notebook 17's exercises (how a matrix lies in memory; where the kernel reads an element of a
batch's entry), and right answers written unusually."""
from . import Wrong

ROWS = "    if (col_step == 1 or cols == 1) and (row_step == cols or rows == 1): return 'rows'"
COLUMNS = "    if (row_step == 1 or rows == 1) and (col_step == rows or cols == 1): return 'columns'"
INSIDE = "    inside = c * rows + r if transposed else r * cols + c"
TOTAL = "    return entry * batch_stride + inside"

WRONG = [
    Wrong('17.1', "neighbours 1 apart is enough", change=(ROWS, "    if col_step == 1: return 'rows'"),
          expect=r"its first 3 columns, x\[:, :3\]\) returned 'rows', but it is neither.*here they are 1 and 6 apart"),
    Wrong('17.1', "size-1 dimensions not allowed for",
          change=(ROWS, "    if col_step == 1 and row_step == cols: return 'rows'"),
          expect=r"a column of its .T, x.T\[:, :1\]\) returned 'columns', but it lies each row right after the one "
                 r"before.*lies both ways"),
    Wrong('17.1', "columns tested first",
          body=("def how_it_lies(shape, strides):\n    (rows, cols), (row_step, col_step) = shape, strides\n"
                "    if (row_step == 1 or rows == 1) and (col_step == rows or cols == 1): return 'columns'\n"
                "    if (col_step == 1 or cols == 1) and (row_step == cols or rows == 1): return 'rows'\n    return None\n"),
          expect=r"returned 'columns', but it lies each row right after the one before.*says 'rows' first"),
    Wrong('17.1', "a transposed view copied", change=(COLUMNS, "    pass"),
          expect=r"how_it_lies\(\(6, 4\), \(1, 6\)\) \(its .T\) returned None, but it lies each column right after the "
                 r"one before.*a copy would cost a pass over memory for nothing"),
    Wrong('17.1', "a bool", change=(ROWS, "    if (col_step == 1 or cols == 1) and (row_step == cols or rows == 1): return True"),
          expect=r"returned True: return 'rows', 'columns' or None"),
    Wrong('17.2', "the batch forgotten", change=(TOTAL, "    return inside"),
          expect=r"the element's place inside its matrix: entry \d+ starts"),
    Wrong('17.2', "transposed ignored", change=(INSIDE, "    inside = r * cols + c"),
          expect=r"its place in a row-major matrix, but this one is stored transposed"),
    Wrong('17.2', "rows and columns mixed up", change=(INSIDE, "    inside = c * cols + r if transposed else r * cols + c"),
          expect=r"stored transposed, the rows in memory are \d+ floats long"),
    Wrong('17.2', "a 32-bit int",
          change=(TOTAL, "    return (entry * batch_stride + inside + 2**31) % 2**32 - 2**31"),
          expect=r"past 2\^31, an offset that wraps like a 32-bit int lands elsewhere"),
    Wrong('17.2', "a float", change=(TOTAL, "    return (entry * batch_stride + inside) / 1"),
          expect=r"a float: the offset is a whole number"),
]

RIGHT = [
    Wrong('17.1', "by the strides a row-major matrix would have",
          body=("def how_it_lies(shape, strides):\n    rows, cols = shape\n"
                "    same = lambda want: all(n == 1 or s == w for n, s, w in zip(shape, strides, want))\n"
                "    return 'rows' if same((cols, 1)) else 'columns' if same((1, rows)) else None\n"),
          expect=''),
    Wrong('17.2', "through the stored matrix's shape",
          body=("def element_offset(entry, r, c, rows, cols, transposed, batch_stride):\n"
                "    stored_r, stored_c, width = (c, r, rows) if transposed else (r, c, cols)\n"
                "    return entry * batch_stride + stored_r * width + stored_c\n"),
          expect=''),
]

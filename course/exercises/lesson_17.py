"""The exercises of notebook 17: how a matrix lies in memory (row-major, column-major or neither: the drop-in's rule
for reading an operand without a copy), and where the kernel finds element (r, c) of a batch's entry. Both are checked
on a CPU, against course.torch_matmul's own rule and the offsets torch's strides give."""
import random

from .lesson_12 import asked_twice, whole_numbers
from .parts import NotYet, need_function, running
from .registry import exercise

LAYOUTS = ('rows', 'columns', None)


def layout_questions():
    """(what it is, shape, strides) of matrices as torch lays them out: whole matrices, their .T, slices of rows and of
    columns, every other row, single rows and columns, an expanded row and a 1 x 1."""
    import torch
    x = torch.empty(4, 6)
    views = {'a 4 x 6 matrix': x, 'its .T': x.T, 'its first 3 columns, x[:, :3]': x[:, :3], 'rows 1 and 2, x[1:3]': x[1:3],
             'every other row, x[::2]': x[::2], 'its first row, x[:1]': x[:1], 'its first column, x[:, :1]': x[:, :1],
             "a column of its .T, x.T[:, :1]": x.T[:, :1], "a row of its .T, x.T[:1]": x.T[:1],
             'columns 1 to 3 of its .T, x.T[:, 1:3]': x.T[:, 1:3], 'a row expanded to 5 rows': torch.empty(1, 6).expand(5, 6),
             'a 1 x 1 matrix': torch.empty(1, 1), 'a 6 x 4 slice of a 6 x 9 matrix': torch.empty(6, 9)[:, :4],
             'the .T of that slice': torch.empty(6, 9)[:, :4].T, 'a 3 x 5 matrix': torch.empty(3, 5)}
    return [(name, tuple(v.shape), tuple(v.stride())) for name, v in views.items()]


def true_layout(shape, strides):
    "The drop-in's answer: course.torch_matmul.stored_transposed, as 'rows', 'columns' or None."
    import torch
    from ..torch_matmul import stored_transposed
    t = torch.empty(0).as_strided(shape, strides) if 0 in shape else torch.empty(10**3).as_strided(shape, strides)
    return {False: 'rows', True: 'columns', None: None}[stored_transposed(t)]


def layout_mistake(name, shape, strides, got, truth):
    "One sentence on why `got` is wrong for this matrix."
    (rows, cols), (row_step, col_step) = shape, strides
    where = f"how_it_lies({shape}, {strides}) ({name}) returned {got!r}"
    if truth is None:
        return (f"{where}, but it is neither: a row-major {rows} x {cols} matrix has neighbours 1 apart and rows {cols} "
                f"apart, a column-major one rows 1 apart and columns {rows} apart; here they are {col_step} and "
                f"{row_step} apart. The kernel, reading it as {got}, would read the wrong floats: it needs a copy (None)")
    kind = {'rows': f"each row right after the one before ({row_step} = {cols} floats apart, or one row)",
            'columns': f"each column right after the one before ({col_step} = {rows} floats apart, or one column)"}[truth]
    if got is None:
        return f"{where}, but it lies {kind}: the kernel reads it as it lies; a copy would cost a pass over memory for nothing"
    return f"{where}, but it lies {kind}: it is {truth!r}" + (
        " (a matrix of one row or one column lies both ways: the drop-in says 'rows' first)" if 1 in shape else "")


@exercise('17.1', "row-major, column-major, or a copy",
          hints=("Row-major means element (r, c) at r x cols + c: neighbours in a row 1 apart (strides[1] == 1) and rows "
                 "cols apart (strides[0] == cols). Column-major is the same with rows and columns swapped.",
                 "A dimension of size 1 has no neighbour to be apart from, so its stride does not matter: check "
                 "`strides[1] == 1 or cols == 1` and `strides[0] == cols or rows == 1`; test row-major first."))
def row_or_column_major(ns, report):
    fn = need_function(ns, 'how_it_lies', '(shape, strides)')
    questions = layout_questions()

    def ask(key):
        call = f"how_it_lies({key[0]}, {key[1]})"
        with running(call): value = fn(*key)
        if value not in LAYOUTS or isinstance(value, bool):
            raise NotYet(f"{call} returned {value!r}: return 'rows', 'columns' or None")
        return value
    answers = asked_twice([(shape, strides) for _, shape, strides in questions], ask, 'how_it_lies')
    for name, shape, strides in questions:
        truth = true_layout(shape, strides)
        if answers[shape, strides] != truth:
            raise NotYet(layout_mistake(name, shape, strides, answers[shape, strides], truth))
    report.ok(f"the layout of {len(questions)} matrices as torch lays them out (.T views, slices of rows and columns, "
              "single rows and columns, an expanded row), as the drop-in reads them")


def offset_questions():
    "(entry, r, c, rows, cols, transposed, batch_stride): small ones, then some past 2^31."
    rng = random.Random(17)
    cases = []
    for _ in range(150):
        rows, cols = rng.randint(1, 9), rng.randint(1, 9)
        stride = rng.choice([0, rows * cols, rows * cols + rng.randint(1, 7)])
        cases.append((rng.randint(0, 5), rng.randrange(rows), rng.randrange(cols), rows, cols, rng.random() < 0.5, stride))
    cases += [(3, 65538, 32770, 65539, 32771, t, 65539 * 32771) for t in (False, True)]
    return cases


def true_offset(entry, r, c, rows, cols, transposed, batch_stride):
    return entry * batch_stride + (c * rows + r if transposed else r * cols + c)


@exercise('17.2', "where the kernel reads an element",
          hints=("Row-major: element (r, c) of a rows x cols matrix is r x cols + c floats from its first. Stored "
                 "transposed, the memory holds a cols x rows row-major matrix, and (r, c) is its element (c, r).",
                 "Entry `entry` starts entry x batch_stride floats after entry 0 (0 for every entry where the stride is "
                 "0: the same matrix): entry * batch_stride + (c * rows + r if transposed else r * cols + c)."))
def element_offset(ns, report):
    fn = need_function(ns, 'element_offset', '(entry, r, c, rows, cols, transposed, batch_stride)')
    names = ('entry', 'r', 'c', 'rows', 'cols', 'transposed', 'batch_stride')

    def ask(key):
        call = "element_offset(" + ", ".join(f"{n}={v}" for n, v in zip(names, key)) + ")"
        with running(call): value = fn(*key)
        return whole_numbers(value, call, ('the offset',))
    answers = asked_twice(offset_questions(), ask, 'element_offset')
    for key, got in answers.items():
        entry, r, c, rows, cols, transposed, stride = key
        truth = true_offset(*key)
        if got == truth: continue
        call = "element_offset(" + ", ".join(f"{n}={v}" for n, v in zip(names, key)) + f") returned {got}"
        within = c * rows + r if transposed else r * cols + c
        if got == within and entry * stride:
            raise NotYet(f"{call}, the element's place inside its matrix: entry {entry} starts {entry} x {stride} = "
                         f"{entry * stride} floats after entry 0, so the element is at {truth}")
        if transposed and got == entry * stride + r * cols + c:
            raise NotYet(f"{call}, its place in a row-major matrix, but this one is stored transposed: memory holds a "
                         f"{cols} x {rows} row-major matrix, where (r, c) = ({r}, {c}) is element ({c}, {r}), at "
                         f"{c} x {rows} + {r}; with the entry's start, {truth}")
        if transposed and got == entry * stride + c * cols + r:
            raise NotYet(f"{call}: stored transposed, the rows in memory are {rows} floats long (the matrix's "
                         f"columns), so (r, c) is at c x rows + r = {c * rows + r} inside its entry; in all, {truth}")
        if got == (truth + 2**31) % 2**32 - 2**31:              # the offset as a 32-bit int holds it
            raise NotYet(f"{call}, but the element lies at {truth}: past 2^31, an offset that wraps like a 32-bit int "
                         "lands elsewhere (here, before the matrix or inside another entry); Python's ints do not wrap")
        raise NotYet(f"{call}, but the element lies at {truth}")
    report.ok(f"the offset of every element asked ({len(answers)}, row-major and transposed, batch strides of 0, of the "
              "entry's size and larger, and elements past 2^31), as the drop-in kernel computes it")

"""The exercises of notebook 02: tiles in simulated shared memory, one Python call per block."""
import re
from dataclasses import dataclass

from ..checked_simulator import KernelFault, Trace, buffers, dim3, run_block_kernels
from .parts import NotYet, compare, need, running
from .registry import exercise
from .simulated import as_tensor, cdiv, problem, rand
from .watchdog import KernelTimeout


# --------------------------------------------------------------------------------------------------
# Which elements of its inputs each block reads: all those its output tile needs, and no others
# --------------------------------------------------------------------------------------------------

@dataclass
class Operand:
    """An input matrix a tiled block kernel reads (height x width, flat, buffer `name`), and for each block
    (x, y): the rows and columns of it that block needs, the columns its tiles cover (past the matrix's edge
    where a tile sticks out), what each needed element is for, and how its tiles are filled."""
    name: str
    height: int
    width: int
    needed: callable       # block -> (rows, columns): ranges of the elements the block needs
    tile_columns: callable  # block -> the columns its tiles span, past the edge of the matrix included
    used_for: callable     # (r, c) -> 'output row r needs'
    fill: str              # 'each phase fills ms with the block's 4 rows x 4 columns of m'
    k_axis: int            # 1 if the matrix's columns run along k (m, nT), 0 if its rows do (n)
    k_tile: int            # the phase's width along k
    width_name: str = 'k'  # the problem's name for its width: k for m and nT, w for n

    def element(self, i): return divmod(i, self.width)

    def row_length_mistake(self, block, read, sizes, complete=True):
        """A sentence if the block reads its rows of this buffer (the indices `read`) at a row length other than the
        buffer's width: reads that are exactly those of one other row length, or, when the run stopped early (`complete`
        False; `read` then holds the index it stopped at), that fit one other row length more tightly than any other.
        `sizes` ({'h': 5, 'tw': 4, ...}) name that row length where it is one of the problem's sizes. None otherwise."""
        rows, cols = self.needed(block)
        if not read or not any(rows): return None          # row 0 alone reads the same at any row length
        at = lambda length: {r * length + c for r in rows for c in cols}
        others = [n for n in range(1, max(read) + 2) if n != self.width]
        if complete:
            if read == at(self.width): return None
            lengths = [n for n in others if read == at(n)]
        else:
            if read <= at(self.width): return None
            fitting = [n for n in others if read <= at(n)]
            spread = {n: sum(i <= max(read) for i in at(n)) for n in fitting}   # the fewer, the tighter the fit
            lengths = [n for n in fitting if spread[n] == min(spread.values())]
        if len(lengths) != 1: return None
        n = lengths[0]
        named = ' = '.join([name for name, size in sizes.items() if size == n] + [str(n)])
        r, c = next(r for r in rows if r), cols.start
        return (f"block (x={block[0]}, y={block[1]}) reads element ({r}, {c}) of {self.name} at {self.name}[{r * n + c}], "
                f"as if the rows of {self.name} were {named} floats long: {self.name} is {self.height} x {self.width}, "
                f"so its rows are {self.width_name} = {self.width} apart and element ({r}, {c}) is {self.name}"
                f"[{r * self.width + c}]: the row length (the stride from one row to the next) is wrong")

    def stray(self, block, i):
        "A sentence if element i of this buffer is not one the block needs, else None."
        r, c = self.element(i)
        rows, cols = self.needed(block)
        if r in rows and c in cols: return None
        said = (f"block (x={block[0]}, y={block[1]}) reads {self.name}[{i}], element ({r}, {c}) of {self.name}, which "
                f"it does not need: its output tile needs rows {span(rows)} and columns {span(cols)} of {self.name}")
        if r - 1 in rows and c + self.width in self.tile_columns(block):
            return (f"{said}; {self.name}[{i}] is where column {c + self.width} of row {r - 1} would be, past the end "
                    f"of that {self.width}-column row: the tile sticks out of {self.name} there, and its columns from "
                    f"{self.width} on are loaded from {self.name} all the same")
        return said

    def missing(self, block, read):
        "A sentence for the first element the block needs and never read (`read`: the indices it read), else None."
        rows, cols = self.needed(block)
        for r in rows:
            for c in cols:
                if r * self.width + c in read: continue
                said = (f"block (x={block[0]}, y={block[1]}) never reads {self.name}[{r * self.width + c}], element "
                        f"({r}, {c}) of {self.name}, which {self.used_for(r, c)}")
                along_k, k = (c, self.width) if self.k_axis == 1 else (r, self.height)
                if along_k >= k // self.k_tile * self.k_tile:
                    return (f"{said}: the last phase, a partial tile of the last {k % self.k_tile} of k = {k}, is "
                            "missing")
                return f"{said}: {self.fill}"
        return None


def span(r): return f"{r.start} to {r.stop - 1}" if len(r) else "none"


def global_reads(trace, block, name):
    "The indices of buffer `name` that the block kernel read, as a set."
    return {i for where, kind, n, i in trace.addresses.get((block, None), []) if (where, kind, n) == ('global', 'read', name)}


def misread_rows(trace, operands, blocks, sizes, fault=None):
    """The sentence for the first block that reads an operand's rows at a wrong row length (see row_length_mistake), or
    None. `fault`: the sentence of the fault that stopped the run early, if one did (its index counts as read)."""
    stopped = re.search(r"block \(x=(\d+), y=(\d+)\) reads (\w+)\[(\d+)\]", fault or '')
    for by in range(blocks.y):
        for bx in range(blocks.x):
            for op in operands:
                read = global_reads(trace, (bx, by), op.name)
                if stopped and stopped.groups()[:3] == (str(bx), str(by), op.name): read.add(int(stopped.group(4)))
                said = op.row_length_mistake((bx, by), read, sizes, complete=fault is None)
                if said: return said
    return None


def stray_read(trace, operands):
    "The sentence for the first read of an operand's element that its block does not need, or None."
    by_name = {op.name: op for op in operands}
    for (block, _), accesses in trace.addresses.items():
        for where, kind, name, i in accesses:
            if where == 'global' and kind == 'read' and name in by_name:
                said = by_name[name].stray(block, i)
                if said: return said
    return None


def missing_read(trace, operands, blocks):
    "The sentence for the first element a block needs and never reads, or None."
    for by in range(blocks.y):
        for bx in range(blocks.x):
            for op in operands:
                said = op.missing((bx, by), global_reads(trace, (bx, by), op.name))
                if said: return said
    return None


def run_tiled(kernel, inputs, operands, h, w, k, threads, shared_size, what, shared_note, sizes, **kwargs):
    """Run a notebook 02 block kernel kernel(blockIdx, blockDim, shared, *inputs, out, h, w, k, **kwargs), each
    block covering threads.y rows and threads.x columns of out. A fault in shared memory comes with `shared_note` (how
    the tiles lie in it); one in global memory is explained by rows read at a wrong row length (`sizes` name the
    problem's sizes: {'h': 5, 'tw': 4, ...}), or else by the first read of an element the block does not need, if
    there is one. Returns (result, trace, blocks)."""
    import torch
    trace = Trace()
    b = buffers(trace, **inputs, out=torch.zeros(h, w))
    blocks = dim3(cdiv(w, threads.x), cdiv(h, threads.y))
    with running(f"{kernel.__name__} on {what}"):
        try:
            run_block_kernels(kernel, blocks, threads, shared_size, *(b[n] for n in inputs), b['out'], h, w, k,
                              trace=trace, **kwargs)
        except KernelTimeout: raise
        except KernelFault as fault:
            if 'shared[' in str(fault):     # an index past a tile: say how the tiles lie in shared memory
                raise KernelFault(f"{str(fault).replace(': a bound check is missing or wrong', '')}; {shared_note}") from None
            raise KernelFault(misread_rows(trace, operands, blocks, sizes, str(fault)) or stray_read(trace, operands)
                              or str(fault)) from None
    return as_tensor(b['out'], h, w), trace, blocks


def tiles_read_right(trace, operands, blocks, what, sizes):
    "Fail if a block reads its rows of an operand at a wrong row length, reads an element it does not need, or never reads one it needs."
    said = misread_rows(trace, operands, blocks, sizes) or stray_read(trace, operands) or missing_read(trace, operands, blocks)
    if said: raise NotYet(f"on {what}, {said}")


def global_reads_at_most(trace, names, limit, what, why):
    "Fail if a block reads more than `limit` values of the buffers `names` from global memory."
    most, (block, _) = trace.most(*names[:1], 'read', *names[1:])
    if most > limit:
        raise NotYet(f"on {what}, block (x={block[0]}, y={block[1]}) reads {most} values from global memory; {why} "
                     f"needs {limit}")


def m_operand(h, k, rows_per_block, k_tile):
    "m (h x k) as a tiled kernel reads it: block (x, y) needs its rows_per_block rows, all k columns."
    return Operand('m', h, k, lambda b: (range(b[1] * rows_per_block, min(h, (b[1] + 1) * rows_per_block)), range(k)),
                   lambda b: range(cdiv(k, k_tile) * k_tile), lambda r, c: f"output row {r} needs",
                   f"each phase fills ms with the block's {rows_per_block} rows x {k_tile} columns of m", 1, k_tile)


# --------------------------------------------------------------------------------------------------
# 02.1: n given transposed
# --------------------------------------------------------------------------------------------------

TRANSPOSED_SHAPES = (((5, 7, 3), 4), ((1, 37, 5), 8), ((6, 37, 1), 8), ((17, 9, 13), 4), ((9, 6, 14), 4))


@exercise('02.1', 'the tiled kernel, with n given transposed',
          hints=("Only the tile of n changes: element (i, c) of n is nT[c*k + i] (nT is w x k, row by row). Load 0. wherever a tile sticks out of nT or m, along k too, and cover k with cdiv(k, tw) phases, the last one partial.",
                 "Element (i, c) of n is nT[c*k + i]. Either load ns[tr*tw + tc] = nT[c*k + idx + tr] (0. unless c < w and idx + tr < k), or, better on a GPU, let neighbours in tc read neighbours in nT: ns[tc*tw + tr] = nT[(c0 + tr)*k + idx + tc] with c0 = blockIdx.x*tw, guarded likewise; the dot products stay as in notebook 02."))
def transposed_n(ns, report):
    import torch
    kernel, = need(ns, 'matmul_nt_bk')
    for (h, k, w), tw in TRANSPOSED_SHAPES:
        what = problem(h, k, w, tw=tw).replace(f"n {k}x{w}", f"nT {w}x{k}")
        m, nT = rand(h, k), rand(w, k)
        nT_operand = Operand('nT', w, k, lambda b: (range(b[0] * tw, min(w, (b[0] + 1) * tw)), range(k)),
                             lambda b: range(cdiv(k, tw) * tw), lambda r, c: f"output column {r} needs",
                             f"each phase fills ns with the tw x tw tile of n that the block's {tw} columns need: "
                             "row c of nT is column c of n", 1, tw)
        operands = (m_operand(h, k, tw, tw), nT_operand)
        sizes = dict(h=h, w=w, k=k, tw=tw)
        got, trace, blocks = run_tiled(kernel, dict(m=m, nT=nT), operands, h, w, k, dim3(tw, tw), 2 * tw * tw, what,
                                       "ms = shared[:tw*tw] and ns = shared[tw*tw:] each hold tw x tw values", sizes, tw=tw)
        tiles_read_right(trace, operands, blocks, what, sizes)
        if not torch.allclose(got, m @ nT.t(), atol=1e-4) and torch.allclose(got, m @ nT.reshape(k, w), atol=1e-4):
            raise NotYet(f"on {what}, the result is m @ (nT's values read as a k x w matrix, the layout of n): nT is "
                         "w x k, and row c of nT is column c of n")
        compare(got, m @ nT.t(), what)
        global_reads_at_most(trace, ('m', 'nT'), 2 * tw * tw * cdiv(k, tw), what,
                             f"with each value of a tile read once and the dot products read from ms and ns, "
                             f"{cdiv(k, tw)} phases of 2*tw*tw")
    report.ok("right on 5x7 @ 7x3 (tw=4), 1x37 @ 37x5 and 6x37 @ 37x1 (tw=8), 17x9 @ 9x13 and 9x6 @ 6x14 (tw=4), with n given as nT")
    report.ok("every block reads each element of its tiles from global memory once (2*tw*tw per phase), and no other")


# --------------------------------------------------------------------------------------------------
# 02.2: rectangular tiles
# --------------------------------------------------------------------------------------------------

RECT_CASES = (((5, 7, 3), (4, 8, 4)), ((9, 11, 10), (8, 2, 3)), ((1, 13, 6), (2, 4, 8)), ((7, 5, 1), (4, 2, 6)),
              ((10, 13, 9), (3, 5, 4)))


@exercise('02.2', 'rectangular tiles',
          hints=('With th x tk and tk x tw tiles, a phase covers tk values of k, so k takes cdiv(k, tk) phases, the last one partial; rows of the output come in steps of th (blockDim.y), columns in steps of tw (blockDim.x). Load 0. wherever a tile sticks out of m or n.',
                 'ms has th rows of tk, ns has tk rows of tw: fill ms[i*tk + j] from m[(r0 + i)*k + idx + j] and ns[i*tw + j] from n[(idx + i)*w + c0 + j], 0. where the row or the column leaves the matrix; then p += ms[tr*tk + i] * ns[i*tw + tc] for i < tk.'))
def rectangular_block_tiles(ns, report):
    kernel, = need(ns, 'matmul_rect_bk')
    for (h, k, w), (th, tw, tk) in RECT_CASES:
        what = problem(h, k, w, th=th, tw=tw, tk=tk)
        m, n = rand(h, k), rand(k, w)
        n_operand = Operand('n', k, w, lambda b: (range(k), range(b[0] * tw, min(w, (b[0] + 1) * tw))),
                            lambda b: range(b[0] * tw, (b[0] + 1) * tw), lambda r, c: f"output column {c} needs",
                            f"each phase fills ns with tk = {tk} rows x the block's tw = {tw} columns of n", 0, tk, 'w')
        operands = (m_operand(h, k, th, tk), n_operand)
        sizes = dict(h=h, w=w, k=k, th=th, tw=tw, tk=tk)
        got, trace, blocks = run_tiled(kernel, dict(m=m, n=n), operands, h, w, k, dim3(tw, th), th * tk + tk * tw, what,
                                       f"ms = shared[:th*tk] holds th x tk = {th} x {tk} values (row i at i*tk) and ns = "
                                       f"shared[th*tk:] tk x tw = {tk} x {tw} (row i at i*tw)", sizes, tk=tk)
        tiles_read_right(trace, operands, blocks, what, sizes)
        compare(got, m @ n, what)
        global_reads_at_most(trace, ('m', 'n'), (th * tk + tk * tw) * cdiv(k, tk), what,
                             "reading each tile once, th*tk + tk*tw per phase,")
    report.ok("right with th x tw blocks of 4x8, 8x2, 2x4, 4x2 and 3x5 and k-tiles of 4, 3, 8, 6 and 4, on awkward shapes")
    report.ok("every block reads each element of its tiles once, and no other")

"""The exercises of notebook 06: CUDA C with static shared memory, and shared-memory banks."""
import ast, math, re, subprocess, tempfile
from dataclasses import dataclass
from pathlib import Path

from ..checked_simulator import Trace, buffers, dim3, run_threaded_blocks
from .banks import WARP_SIZE, column_ways, conflict_ways, stored_rows, worst_conflict
from .barrier_placement import strip_c
from .gpu_kernels import SMALL_MATMUL_CALLS, TILED_NEEDS, matmul_via, require_machine_code
from .fenced_runs import check_matmul_fenced, crash_explained, run_fenced, sanitized_cell, seeded
from .parts import ROOT, NotYet, at_most, barriers_in_place, cell_place, compare, compiled, faster_than, gpu_here, need, running
from .registry import exercise
from .simulated import as_tensor, cdiv, double_store, nan_buffer, rand, uncoalesced


@exercise('06.1', 'rectangular tiles in static shared memory',
          hints=('With constants TH, TW and TK, the shared tiles are static arrays: __shared__ float ms[TH][TK], ns[TK][TW].',
                 'A th x tw block loads a th x tk tile of m and a tk x tw tile of n: each thread loads tk/tw values of ms and tk/th of ns in strided loops, then two __syncthreads() around the dot product.'), runs_on_gpu=True)
def static_rect_tiles(ns, report):
    src, = need(ns, 'rect_cuda_src')
    if not isinstance(src, str): raise NotYet("rect_cuda_src must be a string of CUDA C")
    if re.search(r'extern\s+__shared__', strip_c(src)):
        raise NotYet("the kernel declares `extern __shared__` memory, where the exercise asks for static shared arrays "
                     "sized by the constants TH, TW and TK")
    mod = compiled(report, src, 'rect_cuda_src')
    require_machine_code(report, src, 'matmul_rect_k', TILED_NEEDS, 'matmul_rect_k')
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    calls = SMALL_MATMUL_CALLS.format(fn='matmul_rect', extra='')
    with crash_explained(report, src, 'rect_cuda_src', calls):
        check_matmul_fenced(lambda m, n, out, h, w, k: mod.matmul_rect(m, n, out, h, w, k), "matmul_rect")
    report.ok("right on the lecture's problem and awkward shapes, nothing read or written outside the buffers")
    sanitized_cell(report, src, 'rect_cuda_src', calls)
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    m, n, _ = lecture_problem('cuda')
    faster_than(report, matmul_via(mod.matmul_rect), import_notebook('06').matmul_static, (m, n), 1.1,
                "on the lecture's problem", "notebook 06's 16x16 matmul_static")


# --------------------------------------------------------------------------------------------------
# The shared tile of a CUDA C source, read from its declaration and from the indices its accesses use
# --------------------------------------------------------------------------------------------------

C_OPERATORS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.Div: lambda a, b: a // b if b else None, ast.Mod: lambda a, b: a % b if b else None,
               ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b, ast.BitAnd: lambda a, b: a & b,
               ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}
C_INT_CAST = r'\(\s*(?:const\s+)?(?:unsigned\s+)?(?:int|size_t|long|unsigned)\s*\)'


def c_int(expr, names):
    """The value of a C integer expression of numbers, `names` (a name, or a member such as threadIdx.x), + - * / % << >>
    & | ^, parentheses and integer casts; None if it holds anything else."""
    try: tree = ast.parse(re.sub(C_INT_CAST, '', expr).strip(), mode='eval')
    except SyntaxError: return None
    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int: return node.value
        if isinstance(node, ast.Name): return names.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name): return names.get(f"{node.value.id}.{node.attr}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = value(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.BinOp) and type(node.op) in C_OPERATORS:
            a, b = value(node.left), value(node.right)
            return None if a is None or b is None else C_OPERATORS[type(node.op)](a, b)
        return None
    return value(tree.body)


def c_constants(code):
    "The integer constants of a CUDA C source (`constexpr int A = 32, B = A + 1;`, `#define A 32`), where they can be evaluated."
    names = {}
    for name, expr in re.findall(r'^[ \t]*#define[ \t]+(\w+)[ \t]+([^\n]+)', code, re.M):
        v = c_int(expr, names)
        if v is not None: names[name] = v
    for decl in re.findall(r'\b(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+)?(?:int|size_t|long)\s+([^;{}]+);', code):
        for part in decl.split(','):
            name, eq, expr = part.partition('=')
            v = c_int(expr, names) if eq else None
            if v is not None and name.strip().isidentifier(): names[name.strip()] = v
    return names


def shared_float_tiles(code):
    "(name, rows expression, columns expression) of each two-dimensional `__shared__ float` array of the source."
    tiles = []
    for decl in re.findall(r'__shared__\s+float\s+([^;]+);', code):
        tiles += re.findall(r'(\w+)\s*\[([^\]]+)\]\s*\[([^\]]+)\]', decl)
    return tiles


def bracketed(code, start):
    "(the text inside the brackets that open at code[start], the position after them), or None if they never close."
    depth = 0
    for i in range(start, len(code)):
        depth += {'[': 1, ']': -1}.get(code[i], 0)
        if depth == 0: return code[start + 1:i], i + 1
    return None


def integer_locals(code):
    "(name, expression) of each integer variable the source declares with a value (`int x = ..., y = ...;`, a loop's `int j = ...`), in order."
    found = []
    for decl in re.findall(r'\b(?:const\s+)?(?:unsigned\s+int|unsigned|int|size_t|long)\s+([^;{}()]*(?:\([^;{}]*?\)[^;{}()]*)*);', code):
        parts, depth, last = [], 0, 0
        for i, ch in enumerate(decl + ','):
            depth += (ch in '([') - (ch in ')]')
            if ch == ',' and depth == 0: parts.append(decl[last:i]); last = i + 1
        found += [(n.strip(), e) for n, eq, e in (p.partition('=') for p in parts) if eq and n.strip().isidentifier()]
    return found


def launch_block(code, names):
    "(blockDim.x, blockDim.y) of the source's launch `<<<grid, block, ...>>>`, from the block's dim3 or numbers; (32, 1) if unread."
    launch = re.search(r'<<<\s*[^,>]+,\s*(\w+)', code)
    decl = launch and re.search(rf'\b{launch.group(1)}\s*\(([^()]*)\)', code)
    sides = [c_int(t, names) for t in decl.group(1).split(',')] if decl else []
    return (sides[0], sides[1] if len(sides) > 1 else 1) if sides and None not in sides else (WARP_SIZE, 1)


def lane_names(code, names, block, lane):
    "The values of the constants and of the integer variables the source declares, as lane `lane` of warp 0 of block (0, 0) has them."
    bx, by = block
    values = {**names, 'threadIdx.x': lane % bx, 'threadIdx.y': lane // bx % by, 'threadIdx.z': 0, 'blockIdx.x': 0,
              'blockIdx.y': 0, 'blockIdx.z': 0, 'blockDim.x': bx, 'blockDim.y': by, 'blockDim.z': 1}
    for name, expr in integer_locals(code):
        v = c_int(expr, values)
        if name not in values and v is not None: values[name] = v
    return values


@dataclass
class TileAccess:
    "One access of a CUDA C source to a shared tile: where it stands, its text, and the word it touches, as a C expression."
    position: int      # in the source
    text: str          # 'flat[threadIdx.x*TILE + j]'
    word: str          # the word offset in the tile: '(threadIdx.x)*33 + (j)'
    stores: bool       # a store to the tile (else a read)
    direct: bool       # tile[r][c] (else through a float pointer into the tile)
    lane_words: list = None    # the word of each lane of warp 0, where the source gives them all

    @property
    def conflict(self): return conflict_ways(self.lane_words)   # (ways, bank, its words)


def tile_accesses(code, name, cols):
    """Each access of the source to the shared tile `name` (cols floats per row), directly (tile[r][c]) or through a float
    pointer into it (float* p = &tile[0][0]; p[i]), as TileAccess."""
    found = []
    for m in re.finditer(rf'(?<!&)(?<!&\s)\b{name}\s*\[', code):
        row = bracketed(code, m.end() - 1)
        col = row and re.match(r'\s*\[', code[row[1]:]) and bracketed(code, code.index('[', row[1]))
        if row and col: found.append((m.start(), col[1], f"({row[0]})*{cols} + ({col[0]})", True))
    float_pointer = r'(?:const\s+)?float\s*\*\s*(?:const\s+)?'
    for alias, ref, rest in re.findall(rf'\b{float_pointer}(\w+)\s*=\s*(?:\(\s*{float_pointer}\)\s*)?&?\s*{name}\b'
                                       r'((?:\s*\[[^\]]*\])*)\s*([^;]*);', code):
        indices = re.findall(r'\[([^\]]*)\]', ref) + ['0', '0']
        base = f"({indices[0]})*{cols} + ({indices[1]})" + (f" {rest}" if rest.strip().startswith(('+', '-')) else '')
        for m in re.finditer(rf'\b{alias}\s*\[', code):
            index = bracketed(code, m.end() - 1)
            if index: found.append((m.start(), index[1], f"{base} + ({index[0]})", False))
    return [TileAccess(start, code[start:end], word, bool(re.match(r'\s*[-+*/]?=(?!=)', code[end:])), direct)
            for start, end, word, direct in found]


def warp_tile_accesses(code, name, cols, names):
    "The tile's accesses, each with the word of every lane of warp 0 of block (0, 0), None where the source does not give it."
    block = launch_block(code, names)
    lanes = [lane_names(code, names, block, lane) for lane in range(WARP_SIZE)]
    accesses = tile_accesses(code, name, cols)
    for access in accesses: access.lane_words = [c_int(access.word, values) for values in lanes]
    return accesses


def tile_is_padded(report, src, what, src_name):
    """Read the shared tile from the source and, with the bank model, fail if a warp's access to it meets a bank conflict:
    each access whose words the source gives for every lane (tile[r][c], or a float pointer into the tile); where an
    access's words cannot be read, also a warp reading one of its columns, as the declaration lays them out."""
    code = strip_c(src)
    tiles = shared_float_tiles(code)
    if not tiles:
        return report.skip(f"whether the shared tile of {what} spreads a column over all 32 banks (the check reads it "
                           "from a two-dimensional `__shared__ float tile[..][..]`, and there is none)")
    names = c_constants(code)
    body = re.sub(r'__shared__[^;]*;', lambda d: re.sub(r'[^\n]', ' ', d.group(0)), code)   # the accesses, not the declarations
    place = cell_place(report, src, src_name)
    for name, rows_text, cols_text in tiles:
        rows, cols = c_int(rows_text, names), c_int(cols_text, names)
        declared = f"{name}[{rows_text.strip()}][{cols_text.strip()}]"
        if rows is None or cols is None:
            report.skip(f"whether {name}[{rows_text}][{cols_text}] spreads a column over all 32 banks (its size could "
                        "not be read from the source)")
            continue
        accesses = warp_tile_accesses(body, name, cols, names)
        judged = [a for a in accesses if None not in a.lane_words]
        worst = max(judged, key=lambda a: a.conflict[0], default=None)
        column = column_ways(rows, cols)     # a warp reading a column of the tile, as the declaration lays it out
        if worst is not None and worst.conflict[0] > 1 and not (worst.direct and column[0] > 1):
            raise NotYet(f"the shared tile {declared} has rows of {cols} floats, but {access_sentence(worst, place, src)}")
        if judged and len(judged) == len(accesses) and worst.conflict[0] == 1:
            report.ok(f"the shared tile {declared}: each of its accesses ({len(judged)}) touches different banks in a warp "
                      "(the bank model, from their indices)")
            continue
        if re.search(rf'\b{name}\s*\[[^\]]*\^', code) and (worst is None or worst.conflict[0] == 1):
            report.skip(f"whether the swizzled tile {name} is free of bank conflicts (the bank model could not read all its indices)")
            continue
        ways, bank, words = column
        if ways > 1:
            raise NotYet(f"the shared tile {declared} has rows of {cols} floats: "
                         f"a warp reading one of its columns ({name}[threadIdx.x][j]) reads words {cols} apart, {ways} of "
                         f"them in bank {bank} (words {', '.join(map(str, words[:3]))}, ...): a {ways}-way bank conflict, "
                         f"{ways} passes instead of one")
        report.ok(f"the shared tile {declared}: a warp reading one of its columns touches {min(rows, WARP_SIZE)} different "
                  "banks (the bank model, from its declaration)")


def access_sentence(access, place, src):
    "'the read of `flat[threadIdx.x*TILE + j]` at line 18 of the cell gives the 32 lanes of a warp words 32 apart, ...'."
    ways, bank, words = access.conflict
    steps = {b - a for a, b in zip(access.lane_words, access.lane_words[1:])}
    apart = f"words {steps.pop()} apart" if len(steps) == 1 else "words scattered"
    return (f"the {'store to' if access.stores else 'read of'} `{' '.join(access.text.split())}` at "
            f"{place(src.count(chr(10), 0, access.position) + 1)} gives the {WARP_SIZE} lanes of a warp {apart}, {ways} of "
            f"them in bank {bank} (words {', '.join(map(str, words[:3]))}, ...): a {ways}-way bank conflict, {ways} passes "
            "instead of one")


# Nsight Compute's counters of shared-memory bank conflicts, and of the shared-memory instructions they slow down.
BANK_COUNTERS = (('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum', 'sm__sass_inst_executed_op_shared_ld.sum', 'loads'),
                 ('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum', 'sm__sass_inst_executed_op_shared_st.sum', 'stores'))


def measured_bank_conflicts(report, src, kernel, calls):
    """On the GPU, with Nsight Compute: fail if the kernel's shared loads or stores meet bank conflicts
    (more than one extra pass for every two instructions: a padded tile has none)."""
    from ..profiling import ncu_unavailable, ncu_counters
    why = ncu_unavailable()
    if why: return report.skip(f"bank conflicts measured on the GPU ({why})")
    from .isolation import progress
    progress("measuring bank conflicts with Nsight Compute", 300)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / 'kernel.cu'
        path.write_text(src)
        snippet = (f"import torch\nfrom course.cuda_library import compile_cuda\nmod = compile_cuda(open({str(path)!r}).read())\n"
                   f"{calls}\ntorch.cuda.synchronize()\n")
        try:
            values = ncu_counters(snippet, kernel, counters=[c for row in BANK_COUNTERS for c in row[:2]], cwd=str(ROOT),
                                  timeout=240)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            return report.skip(f"bank conflicts measured on the GPU (ncu: {e})")
    seen = []
    for conflicts_name, instructions_name, what in BANK_COUNTERS:
        conflicts, instructions = values.get(conflicts_name, math.nan), values.get(instructions_name, math.nan)
        if math.isnan(conflicts) or math.isnan(instructions) or not instructions:
            return report.skip(f"bank conflicts measured on the GPU (ncu gave no count for the shared {what})")
        if conflicts > 0.5 * instructions:
            raise NotYet(f"Nsight Compute counts {conflicts:.0f} bank conflicts in the {instructions:.0f} shared {what} "
                         f"of {kernel} on the GPU, {conflicts / instructions:.1f} extra passes each: a warp's lanes touch "
                         "different words of one bank")
        seen.append(f"{conflicts:.0f} in {instructions:.0f} shared {what}")
    report.ok(f"Nsight Compute counts few bank conflicts on the GPU: {' and '.join(seen)}")


@exercise('06.2', 'a transpose through a padded shared tile',
          hints=('Read a tile with neighbouring threads on neighbouring columns of m, and write it with neighbouring threads on neighbouring columns of out: only the shared tile is read transposed. Give each row of the tile one float more than it holds (an odd row length), and index the tile with that row length everywhere.',
                 '__shared__ float tile[32][33]: the extra column shifts each row by one bank, so reading a column of the tile touches 32 different banks.'), runs_on_gpu=True)
def cuda_transpose(ns, report):
    import torch
    src, = need(ns, 'transpose_cuda_src')
    mod = compiled(report, src, 'transpose_cuda_src')
    require_machine_code(report, src, 'transpose_k', {
        'shared stores': (1, "the kernel never stores to shared memory, so no tile is staged there"),
        'shared loads': (1, "the kernel never reads shared memory, so out is not written from a shared tile"),
        'barriers': (1, "a __syncthreads() is missing between filling the tile and reading it")}, 'transpose_k')
    tile_is_padded(report, src, 'transpose_k', 'transpose_cuda_src')
    if mod is None: return
    if not gpu_here():
        return report.skip("running it: correctness, out-of-bounds accesses, races, bank conflicts measured by "
                           "Nsight Compute and speed need a GPU")
    calls = '''
for h, w in ((33, 17), (1, 70), (70, 1)):
    mod.transpose(torch.rand(h, w, device='cuda'), torch.empty(w, h, device='cuda'), h, w)
'''
    with crash_explained(report, src, 'transpose_cuda_src', calls):
        for seed, (h, w) in enumerate(((1024, 704), (1000, 700), (1, 700), (700, 1), (33, 17), (4096, 4096))):   # whole tiles first
            m = seeded(h, w, seed=seed)
            got = run_fenced(f"transposing a {h}x{w} m", lambda m, out: mod.transpose(m, out, h, w), {'m': m}, (w, h))
            compare(got, m.t(), f"transposing a {h}x{w} m")
    report.ok("right on 1024x704, 1000x700, 1x700, 700x1, 33x17 and 4096x4096, nothing read or written outside the buffers")
    sanitized_cell(report, src, 'transpose_cuda_src', calls)
    measured_bank_conflicts(report, src, 'transpose_k', '''
m, out = torch.rand(2048, 2048, device='cuda'), torch.empty(2048, 2048, device='cuda')
mod.transpose(m, out, 2048, 2048)''')
    def transpose(m):
        out = torch.empty(m.shape[1], m.shape[0], device=m.device)
        mod.transpose(m, out, m.shape[0], m.shape[1])
        return out
    m = rand(8192, 8192, device='cuda')
    faster_than(report, transpose, lambda m: m.t().contiguous(), (m,), 1.25, "an 8192x8192 transpose",
                "torch's m.t().contiguous()")


# --------------------------------------------------------------------------------------------------
# 06.3: banks, in the simulator
# --------------------------------------------------------------------------------------------------

NT_TH, NT_TW, NT_TK = 8, 32, 32                        # the launch of 06.3: 32 x 8 threads, k in steps of 32
NT_SHARED = NT_TH * NT_TK + NT_TW * (NT_TK + 1)         # ms, then nt's tile with room for one float of padding per row
NT_SHAPES = ((8, 32, 32), (7, 37, 33))                  # one whole block; then awkward h, k and w (two blocks, two phases)
# Where the tiles of 06.3 lie in `shared`: (name, first word, end).
NT_TILES = (('the tile of m', 0, NT_TH * NT_TK), ('the tile of nt', NT_TH * NT_TK, NT_SHARED))


def run_nt_kernel(kernel, m, nt, seed, races_checked=True):
    "Run the learner's matmul_nt_k on m and nt (one Python thread per CUDA thread); returns (out, trace)."
    (h, k), w = m.shape, nt.shape[0]
    trace = Trace()
    trace.races_checked = races_checked
    b = buffers(trace, m=m, nt=nt)
    out = nan_buffer(trace, 'out', h * w)
    run_threaded_blocks(kernel, dim3(cdiv(w, NT_TW), cdiv(h, NT_TH)), dim3(NT_TW, NT_TH), NT_SHARED, b['m'], b['nt'], out,
                        h, w, k, trace=trace, seed=seed)
    return out, trace


def overlapping_rows(kernel, m, nt, seed, race):
    """The sentence for two threads storing one shared word in one phase (`race`, see double_store): rows of a tile that
    overlap, found by running the kernel again with the races left unchecked and reading the rows its warps store.
    Which race the threaded run catches first depends on the OS's scheduling, so the sentence does not start from it:
    it names the first overlapping pair of rows in the full trace (first block, first tile, first rows) and the threads
    that stored their shared word, the same on every run."""
    def both_store(block, first, second, word):
        return (f"threads (x={first[0]}, y={first[1]}) and (x={second[0]}, y={second[1]}) of block (x={block[0]}, "
                f"y={block[1]}) both store shared[{word}] in the same phase, and no barrier can keep both values")
    try:
        with running("matmul_nt_k again, its races unchecked"): _, trace = run_nt_kernel(kernel, m, nt, seed, races_checked=False)
    except NotYet: trace = None
    found = first_overlap(trace) if trace else None
    if found is None:
        block, first, second, word = race
        name = next((t[0] for t in NT_TILES if t[1] <= word < t[2]), 'shared memory')
        return f"{both_store(block, first, second, word)}: two elements of {name} land in one word, so its layout in shared memory overlaps"
    block, name, (ra, a), (rb, b), (first, second) = found
    word = b                                     # element 0 of row rb, and element b - a of row ra
    return (f"rows {ra} and {rb} of {name} overlap in shared memory: its warps store each row as {WARP_SIZE} floats, but "
            f"row {ra} starts at shared[{a}] and row {rb} at shared[{b}], {b - a} floats further, so element {word - a} of row "
            f"{ra} and element {word - b} of row {rb} are both shared[{word}]: {both_store(block, first, second, word)}")


def first_overlap(trace):
    """The first two rows of a shared tile that overlap in an unchecked run's trace: (block, tile's name, (row, first
    word), (row, first word), the first two threads that stored the second row's first word), or None. Blocks in order
    (y, then x), tiles as NT_TILES lists them, rows by their place in shared memory."""
    blocks = sorted({b for b, t in trace.addresses if t is not None}, key=lambda b: tuple(b)[::-1])
    for block in blocks:
        rows = stored_rows(trace, dim3(NT_TW, NT_TH), block)
        for name, base, end in NT_TILES:
            starts = [s for s in rows if base <= s < end]
            for r, (a, b) in enumerate(zip(starts, starts[1:])):
                if b >= a + WARP_SIZE: continue
                threads = sorted((tuple(t)[:2] for (bl, t), made in trace.addresses.items() if bl == block and t is not None
                                  and any(where == 'shared' and kind == 'write' and i == b for where, kind, _, i in made)),
                                 key=lambda t: t[::-1])
                if len(threads) >= 2: return block, name, (r, a), (r + 1, b), threads[:2]
    return None


@exercise('06.3', 'shared-memory banks, with n given transposed',
          hints=("Coalesced: let the 32 threads of a warp read 32 neighbours along one row of nt, and store them as a row of the shared tile. The dot product then reads that tile down a column, lane tc in row tc. The rows of a tile in `shared` lie at least a row's length apart: TK = 32 for m's tile, TK + 1 = 33 for nt's (odd, so a column spreads over the 32 banks).",
                 "Store row j of the tile at nts[j*NT_STRIDE + tc] for j in range(tr, TW, TH), and read nts[tc*NT_STRIDE + i]. With NT_STRIDE = 32 the 32 lanes' words are 32 apart, all in one bank; NT_STRIDE = TK + 1 = 33 puts them in 32 different banks."))
def shared_memory_banks(ns, report):
    kernel, = need(ns, 'matmul_nt_k')
    barriers_in_place(report, kernel, 'matmul_nt_k')
    threads = dim3(NT_TW, NT_TH)
    for seed, (h, k, w) in enumerate(NT_SHAPES):
        m, nt = seeded(h, k, seed=seed, device='cpu'), seeded(w, k, seed=seed + 100, device='cpu')
        what = f"matmul_nt_k on m {h}x{k} and nt {w}x{k}"
        try:
            with running(what): out, trace = run_nt_kernel(kernel, m, nt, seed)
        except NotYet as e:
            race = double_store(str(e))
            if race: raise NotYet(f"{what}: {overlapping_rows(kernel, m, nt, seed, race)}") from None
            raise
        compare(as_tensor(out, h, w), m @ nt.T, f"m @ nt.T with m {h}x{k} and nt {w}x{k}")
        loads = (1 + NT_TW // NT_TH) * cdiv(k, NT_TK)
        at_most(trace, 'global', 'read', loads, f"sharing the loads of both tiles among the block's threads on {what}")
        for name in ('m', 'nt'): uncoalesced('read', name, trace)
        for kind in ('write', 'read'):
            worst = worst_conflict(trace, threads, kind)
            if worst is None:
                raise NotYet(f"{what}: no thread {kind}s shared memory, so the tiles of m and nt are not staged in `shared`")
            if worst.conflict[0] > 1:
                raise NotYet(f"{worst.sentence()}: words a multiple of 32 apart share a bank, so the warp's {kind} takes "
                             f"{worst.conflict[0]} passes instead of one")
    report.ok("no race and no deadlock, with shuffled thread orders")
    report.ok("m @ nt.T right on 8x32 @ (32x32).T and 7x37 @ (33x37).T, with 32 x 8 threads per block")
    report.ok("each thread loads 1 value of m and 4 of nt per phase, and a warp's loads are 32 neighbours (coalesced)")
    report.ok("every warp's shared reads and writes touch 32 different banks, or share a word (the bank model)")

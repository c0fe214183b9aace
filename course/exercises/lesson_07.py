"""The exercises of notebook 07: CUDA C templates."""
import re

from .barrier_placement import strip_c
from .endless_loops import closing
from .gpu_kernels import GPU_SHAPES, SMALL_MATMUL_CALLS, TILED_NEEDS, matmul_via
from .fenced_runs import SMALL_EPILOGUE_CALLS, check_matmul_fenced, crash_explained, ptx_listing, relu_ops, sanitized_cell
from .parts import NotYet, cell_place, compiled, count_in, faster_than, gpu_here, need
from .registry import exercise


# --------------------------------------------------------------------------------------------------
# A `switch` whose case falls through into the next one, read from the source
# --------------------------------------------------------------------------------------------------

def ends_in_a_jump(statements):
    """Whether a case's statements end in break, return, continue or goto (looking into a final { block } and
    past an `else`). It errs towards yes: it names a fall-through only where it is sure of one."""
    s = statements.strip()
    while s.endswith('}'):
        depth = 0
        for j in range(len(s) - 1, -1, -1):
            depth += (s[j] == '}') - (s[j] == '{')
            if depth == 0: break
        s = s[j + 1:-1].strip()
    last = re.split(r'[;{}]', s.rstrip(';'))[-1]
    last = re.sub(r'^\s*else\b', '', last).strip()
    return bool(re.match(r'(?:break|continue|return\b[^;]*|goto\s+\w+)$', last))


def fall_throughs(src):
    """[(source line, 'case 16', 'case 32', what runs on)] for each case of a switch that runs on into the next label:
    `what runs on` is the statements of the first label after it that has any (labels stacked on one body share it)."""
    code = strip_c(src)
    found = []
    for sw in re.finditer(r'\bswitch\s*\(', code):
        brace = code.find('{', closing(code, sw.end() - 1))
        if brace < 0: continue
        body_end = closing(code, brace)
        labels, depth, i = [], 0, brace + 1
        while i < body_end:
            ch = code[i]
            depth += (ch in '({') - (ch in ')}')
            if depth == 0:
                label = re.match(r'\b(case\s+[^:;]+?|default)\s*:(?!:)', code[i:body_end])
                if label and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == '_')):
                    labels.append((i, i + label.end(), ' '.join(label.group(1).split())))
                    i += label.end()
                    continue
            i += 1
        bodies = [code[start:nxt] for (_, start, _), (nxt, _, _) in zip(labels, labels[1:])]
        bodies.append(code[labels[-1][1]:body_end] if labels else '')
        for j, ((at, _, name), (_, _, next_name)) in enumerate(zip(labels, labels[1:])):
            if bodies[j].strip() and not ends_in_a_jump(bodies[j]):
                runs_on = next((b for b in bodies[j + 1:] if b.strip()), '')
                found.append((code.count('\n', 0, at) + 1, name, next_name, runs_on))
    return found


def kernel_names(src):
    "The names of the __global__ functions of src."
    return set(re.findall(r'__global__[^{;(]*?\b(\w+)\s*\(', strip_c(src)))


def what_runs_on(runs_on, kernels):
    """What a case that falls through does next, in words, from the statements it runs on into: None where they do
    nothing (an empty `default: break;`), so that the fall-through is harmless."""
    statements = [' '.join(s.split()) for s in re.split(r'(?<=;)|(?<=})', runs_on) if s.strip().strip(';').strip()]
    if not statements or re.fullmatch(r'break\s*;?', statements[0]): return None
    if '<<<' in runs_on or any(re.search(rf'\b{k}\b', runs_on) for k in kernels):
        return "launches that kernel too (two kernels writing the same out)"
    returned = re.match(r'return\b\s*([^;]*);?', statements[0])
    if returned and returned.group(1).strip() not in ('', 'cudaSuccess', 'cudaGetLastError()'):
        return (f"runs `{statements[0]}`: the launcher reports an error for this case although its kernel was launched "
                "(and ran)")
    if returned: return None
    return f"runs its statements too (`{statements[0]}`), which were meant for that label only"


def no_fall_through(report, src, what):
    "Fail if a case of a switch in `src` (the learner's variable `what`) runs on into the next label's statements."
    kernels, harmless = kernel_names(src), 0
    for line, name, next_name, runs_on in fall_throughs(src):
        does = what_runs_on(runs_on, kernels)
        if does is None:
            harmless += 1
            continue
        raise NotYet(f"`{name}:` of the switch at {cell_place(report, src, what)(line)} has no `break`: after its launch "
                     f"it runs on into `{next_name}:` and {does}")
    if re.search(r'\bswitch\s*\(', strip_c(src)):
        report.ok("every case of the launcher's switch ends in a break or a return" +
                  (" or runs on only into a label that does nothing" if harmless else ''))


# --------------------------------------------------------------------------------------------------
# The exercises
# --------------------------------------------------------------------------------------------------

def instances(src, kernel):
    "The template instances of `kernel` in the PTX of src, as C++ writes them: 'matmul_epi_k<16, true>, ...'."
    from ..disassembly import cuda_ptx
    made = dict.fromkeys(re.findall(rf'\.entry\s+_Z\d+{kernel}I((?:L[ib]\d+E)+)E', cuda_ptx(src)))
    def written(args):
        values = [v if kind == 'i' else ('true' if v == '1' else 'false') for kind, v in re.findall(r'L([ib])(\d+)E', args)]
        return f"{kernel}<{', '.join(values)}>"
    return ', '.join(written(args) for args in made)


EPI_WIDTHS = (16, 8, 32)     # 16 first: the skeleton's launcher has it


@exercise('07.1', 'a template on the epilogue: bias, with or without a ReLU',
          hints=("template <int TW, bool RELU>: inside the kernel, `if (RELU) p = fmaxf(p, 0.0f);` tests a constant, so nvcc keeps the clamp in the <TW, true> kernels and drops it from the <TW, false> ones. Each pair the launcher names is compiled; the others never are. Loop the dot product to TW, so nvcc unrolls it, and end each `case` of the launcher's switch with break.",
                 "Start from notebook 07's matmul_tmpl_k (nb07.tmpl_kernel_src) with TW for tw; add the bias parameter and, inside the guard of the write, p += bias[c] then the clamp if RELU. In the launcher, each `case` launches matmul_epi_k<TW, true> or <TW, false> depending on relu, and ends with break."),
          runs_on_gpu=True)
def epilogue_template(ns, report):
    src, = need(ns, 'epi_cuda_src')
    if not isinstance(src, str): raise NotYet("epi_cuda_src must be a string of CUDA C")
    no_fall_through(report, src, 'epi_cuda_src')
    mod = compiled(report, src, 'epi_cuda_src')
    from ..cuda_toolkit import nvcc_available
    if nvcc_available():
        for tw in EPI_WIDTHS:
            for relu in (False, True):
                name = f"matmul_epi_k<{tw}, {str(relu).lower()}>"
                listing = ptx_listing(src, f"matmul_epi_kILi{tw}ELb{int(relu)}E")
                if not listing:
                    raise NotYet(f"no kernel is compiled for TW={tw}, RELU={str(relu).lower()}: the launcher never launches "
                                 f"{name} (for tw={tw} and relu={int(relu)}), and a template is compiled only for the "
                                 f"arguments it is used with (compiled now: {instances(src, 'matmul_epi_k') or 'none'})")
                fmas, barriers = count_in('PTX', listing, 'multiply-adds'), count_in('PTX', listing, 'barriers')
                if not fmas:
                    raise NotYet(f"{name} does no multiply-add (its PTX has none): the tiled matmul before its epilogue "
                                 "is missing")
                if fmas < tw:
                    raise NotYet(f"{name} has {fmas} multiply-adds in its PTX: with TW a template parameter, nvcc unrolls "
                                 f"the dot product into {tw} of them, so this dot product's loop is not unrolled: its bound is not the "
                                 "constant TW")
                if barriers < 2: raise NotYet(f"{name}: {TILED_NEEDS['barriers'][1]} (its PTX has {barriers})")
                clamps = relu_ops(listing)
                if relu and not clamps:
                    raise NotYet(f"{name} never clamps at 0 (no max.f32 and no float comparison in its PTX): the ReLU "
                                 "is missing where RELU is true")
                if not relu and clamps:
                    raise NotYet(f"{name} clamps at 0 (its PTX has {clamps} max.f32 or float comparison): the ReLU must "
                                 "apply only when RELU is true, and this kernel has RELU false")
        report.ok("the PTX holds matmul_epi_k<TW, RELU> for TW = 16, 8, 32 and RELU = true, false: each with its dot "
                  "product unrolled and two barriers, a clamp at 0 in the RELU=true kernels only")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses and races need a GPU")
    calls = (SMALL_EPILOGUE_CALLS.format(fn='matmul_epi', extra=', 8, 1') +
             SMALL_EPILOGUE_CALLS.format(fn='matmul_epi', extra=', 32, 0'))
    def launcher(tw, relu): return lambda m, n, bias, out, h, w, k: mod.matmul_epi(m, n, bias, out, h, w, k, tw, relu)
    with crash_explained(report, src, 'epi_cuda_src', calls):
        for tw in EPI_WIDTHS:
            for relu in (0, 1):
                check_matmul_fenced(launcher(tw, relu), f"matmul_epi with tw={tw}, relu={relu}", GPU_SHAPES[1:],
                                    bias=True, relu=bool(relu))
    report.ok("m @ n + bias, with and without the ReLU, right for tw = 8, 16 and 32 on awkward shapes, nothing read or "
              "written outside the buffers")
    sanitized_cell(report, src, 'epi_cuda_src', calls)


RECT_TILES = ((8, 32), (16, 16), (32, 8), (16, 32))


@exercise('07.2', 'a template on two tile sizes',
          hints=("Give the template two parameters, template<int TH, int TW>, and size everything by them: the block, the tiles and the loops, each loop to a compile-time constant so nvcc unrolls it. The launcher's dispatch launches every (TH, TW) pair of the exercise.",
                 "The launcher's dispatch needs one line per (TH, TW) pair of the exercise; loop over the k-tile with a compile-time bound so nvcc unrolls it."), runs_on_gpu=True)
def two_parameter_template(ns, report):
    src, = need(ns, 'rect_tmpl_cuda_src')
    mod = compiled(report, src, 'rect_tmpl_cuda_src')
    from ..cuda_toolkit import nvcc_available
    if nvcc_available():
        from ..disassembly import cuda_disassembly, kernel_listing
        kind, text = cuda_disassembly(src)
        for th, tw in RECT_TILES:
            listing = kernel_listing((kind, text), f'matmul_rect_tmpl_kILi{th}ELi{tw}E')
            if not listing:
                raise NotYet(f"no kernel is compiled for th={th}, tw={tw}: the launcher's dispatch never launches "
                             f"matmul_rect_tmpl_k<{th}, {tw}>, and a template is compiled only for the arguments it is used with")
            fmas = count_in(kind, listing, 'multiply-adds')
            if not fmas:
                raise NotYet(f"matmul_rect_tmpl_k<{th}, {tw}> does no multiply-add (its {kind} has none): the tiled "
                             "matmul is missing")
            if fmas < tw:
                raise NotYet(f"matmul_rect_tmpl_k<{th}, {tw}> has {fmas} multiply-adds in its {kind}: with TK a "
                             f"compile-time constant, nvcc unrolls the dot product into {tw} of them, so this dot product's "
                             "loop is not unrolled: its bound is not that constant")
            barriers = count_in(kind, listing, 'barriers')
            if barriers < 2:
                raise NotYet(f"matmul_rect_tmpl_k<{th}, {tw}>: {TILED_NEEDS['barriers'][1]} (its {kind} has {barriers})")
        report.ok(f"the {kind} holds matmul_rect_tmpl_k for th x tw = " + ', '.join(f'{a}x{b}' for a, b in RECT_TILES) +
                  ", each with its dot product unrolled and two barriers")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    calls = SMALL_MATMUL_CALLS.format(fn='matmul_rect_tmpl', extra=', 8, 32') + SMALL_MATMUL_CALLS.format(fn='matmul_rect_tmpl', extra=', 32, 8')
    def launcher(th, tw): return lambda m, n, out, h, w, k: mod.matmul_rect_tmpl(m, n, out, h, w, k, th, tw)
    with crash_explained(report, src, 'rect_tmpl_cuda_src', calls):
        for th, tw in RECT_TILES:
            check_matmul_fenced(launcher(th, tw), f"matmul_rect_tmpl with th={th}, tw={tw}", GPU_SHAPES[1:])
    report.ok("right for every th x tw on awkward shapes, nothing read or written outside the buffers")
    sanitized_cell(report, src, 'rect_tmpl_cuda_src', calls)
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    from ..timing import cuda_time_ms
    m, n, _ = lecture_problem('cuda')
    times = {t: cuda_time_ms(matmul_via(mod.matmul_rect_tmpl, *t), m, n) for t in RECT_TILES}
    best = min(times, key=times.get)
    nb07 = import_notebook('07')
    faster_than(report, matmul_via(mod.matmul_rect_tmpl, *best), lambda a, b: nb07.matmul_tmpl(a, b, 16), (m, n), 1.1,
                f"the fastest tile, {best[0]}x{best[1]}, on the lecture's problem", "notebook 07's template with tw=16")

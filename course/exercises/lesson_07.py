"""The exercises of notebook 07: CUDA C templates."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('07.1', 'more tile widths for the template',
          hints=('The template is compiled only for the widths the launcher names: each `case` of its switch instantiates one.',
                 'Add `case 4: launch<4>(...); break;` and `case 24: ...` like the existing cases; a case without `break` falls through into the next one.'), runs_on_gpu=True)
def more_tile_widths(ns, report):
    src, = need(ns, 'tmpl_cuda_src')
    widths = (4, 8, 16, 24, 32)
    mod = compiled(report, src, 'tmpl_cuda_src')
    from ..cuda_toolkit import nvcc_available
    if nvcc_available():
        from ..disassembly import cuda_disassembly
        kind, text = cuda_disassembly(src)
        made = {int(t) for t in re.findall(r'matmul_tmpl_kILi(\d+)E', text)}
        missing = [tw for tw in widths if tw not in made]
        if missing:
            raise NotYet(f"no kernel is compiled for tw={missing[0]}: the launcher's switch needs a `case {missing[0]}:` "
                         f"that launches matmul_tmpl_k<{missing[0]}> (compiled now: {sorted(made) or 'none'})")
        report.ok(f"the {kind} holds matmul_tmpl_k<{'>, <'.join(map(str, widths))}>")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness and out-of-bounds accesses need a GPU")
    for tw in widths:
        check_matmul_on_gpu(matmul_via(mod.matmul_tmpl, tw), f"tw={tw}", GPU_SHAPES[1:])
    report.ok("right with tw = 4, 8, 16, 24 and 32 on awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_tmpl', extra=', 24') +
              SMALL_MATMUL_CALLS.format(fn='matmul_tmpl', extra=', 4'))


RECT_TILES = ((8, 32), (16, 16), (32, 8), (16, 32))


@exercise('07.2', 'a template on two tile sizes',
          hints=('Give the template two parameters, template<int TH, int TW>, and size everything by them: the block, the tiles and the loops.',
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
                raise NotYet(f"no kernel is compiled for th={th}, tw={tw}: launch matmul_rect_tmpl_k<{th}, {tw}> "
                             "from the launcher's dispatch")
            fmas = count_in(kind, listing, 'multiply-adds')
            if fmas < tw:
                raise NotYet(f"matmul_rect_tmpl_k<{th}, {tw}> has {fmas} multiply-adds in its {kind}: with TK a "
                             f"compile-time constant, nvcc unrolls the dot product into {tw} of them; loop to the constant")
        report.ok(f"the {kind} holds matmul_rect_tmpl_k for th x tw = " + ', '.join(f'{a}x{b}' for a, b in RECT_TILES) +
                  ", each with its dot product unrolled")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses and speed need a GPU")
    for th, tw in RECT_TILES:
        check_matmul_on_gpu(matmul_via(mod.matmul_rect_tmpl, th, tw), f"th={th}, tw={tw}", GPU_SHAPES[1:])
    report.ok("right for every th x tw on awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_rect_tmpl', extra=', 8, 32'))
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    from ..timing import cuda_time_ms
    m, n, _ = lecture_problem('cuda')
    times = {t: cuda_time_ms(matmul_via(mod.matmul_rect_tmpl, *t), m, n) for t in RECT_TILES}
    best = min(times, key=times.get)
    nb07 = import_notebook('07')
    faster_than(report, matmul_via(mod.matmul_rect_tmpl, *best), lambda a, b: nb07.matmul_tmpl(a, b, 16), (m, n), 1.1,
                f"the fastest tile, {best[0]}x{best[1]}, on the lecture's problem", "notebook 07's template with tw=16")

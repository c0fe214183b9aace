"""The climb so far: every GPU kernel of the course up to a notebook, timed together on one problem, one bar each,
beside cuBLAS. Each lesson notebook ends with `climb_chart(climb('NN'))`, so a learner sees where that lesson's
kernels land next to everything before them; notebook 15 has the full tables on many shapes.

The kernels come from the notebooks that teach them (their `#| export` cells, through `import_notebook`), never
from copies: `course_kernels` is the one list, which notebook 15 uses too. float32 kernels are timed in one fair
comparison with cuBLAS fp32 (and TF32, as a mark); bf16 kernels in another with cuBLAS bf16
(`course.timing.compare_fairly`: interleaved rounds, inputs that overflow L2). The bars are TFLOP/s (the same
operation count for every precision), so a bf16 bar and an fp32 bar can stand on one axis; each bar's colour says
its precision, and the reference lines say how fast cuBLAS is in each.
"""
import functools
from typing import Callable, NamedTuple

CLIMB_SHAPE = (4096, 4096, 4096)    # large enough for every kernel to fill an H100; small enough to time in seconds
NOTEBOOKS = ('01', '05', '06', '07', '08', '09', '10', '11', '12', '13', '14')   # the notebooks that teach GPU kernels


class Kernel(NamedTuple):
    name: str           # as notebook 15's tables print it: ends with '(NN)', the notebook that teaches it
    notebook: str       # '01' ... '14'
    fn: Callable        # fn(m, n) -> m @ n
    dtype: str          # 'float32' or 'bfloat16': what it multiplies
    tile: object        # (BM, BN, BK), a function of the shape (h, k, w) where a tuner picks it, or None


def tile_params(p):
    "(BM, BN, BK) of a TemplateVariant's parameters."
    return (p['BM'], p['BN'], p['BK'])


def _fp32_kernels(nb):
    "The float32 kernels, notebook by notebook: {notebook: [Kernel]} for the notebooks in `nb` ({'01': module, ...})."
    import inspect
    from utils import load_cuda
    tw = lambda fn: inspect.signature(fn).parameters['tw'].default    # the tile width a wrapper uses unless told
    square = lambda t: (t, t, t)
    out = {}
    def add(notebook, name, fn, tile): out.setdefault(notebook, []).append(Kernel(name, notebook, fn, 'float32', tile))
    if '01' in nb:
        nb01 = nb['01']
        naive = functools.cache(lambda: load_cuda(nb01.naive_cuda_src, nb01.naive_cpp_src, nb01.naive_funcs))
        def naive_matmul(m, n): return naive().matmul(m, n)              # compiled on its first call, not here
        add('01', 'naive CUDA C (01)', naive_matmul, (16, 16, 1))        # 16 x 16 threads, each runs the whole of K
    if '05' in nb: add('05', 'dynamic shared, runtime tw (05)', nb['05'].matmul_dyn, square(tw(nb['05'].matmul_dyn)))
    if '06' in nb: add('06', 'static shared, constexpr tw (06)', nb['06'].matmul_static, square(nb['06'].TILE_WIDTH))
    if '07' in nb:
        add('07', 'template tw=16 (07)', nb['07'].matmul_tmpl, square(tw(nb['07'].matmul_tmpl)))
        add('07', 'template tw=32 (07)', functools.partial(nb['07'].matmul_tmpl, tw=32), square(32))
    if '08' in nb:
        add('08', 'Numba, runtime tw (08)', nb['08'].matmul_numba_dyn, square(tw(nb['08'].matmul_numba_dyn)))
        add('08', 'Numba, constant tw (08)', nb['08'].matmul_numba_static, square(tw(nb['08'].matmul_numba_static)))
    if '09' in nb:
        add('09', 'Numba, runtime tw, uint32 + while (09)', nb['09'].matmul_numba_dyn_tuned, square(tw(nb['09'].matmul_numba_dyn_tuned)))
        add('09', 'Numba, constant tw, unsigned indices (09)', nb['09'].matmul_numba_unsigned, square(tw(nb['09'].matmul_numba_unsigned)))
    if '10' in nb:
        nb10 = nb['10']
        for name, fn in nb10.ladder().items():
            if not name.startswith('07'): add('10', f'{name} (10)', fn, tile_params(fn.params))
        add('10', 'register-tiled, autotuned (10)', nb10.matmul_autotuned,
            lambda shape: tile_params(nb10.TUNED[shape].params) if shape in nb10.TUNED else None)
        add('10', 'Numba register-tiled (10)', nb10.matmul_numba_warptiled, tile_params(nb10.NUMBA_CONFIG))
    if '11' in nb:
        nb11 = nb['11']
        add('11', EVERY_SHAPE, nb11.matmul_fp32,
            lambda shape: tile_params(nb11.FP32_TUNED[shape].params) if shape in nb11.FP32_TUNED else None)
    return out


EVERY_SHAPE = 'every shape, model-tuned (11)'   # the course's fp32 kernel meant for any shape


def _bf16_kernels(nb):
    "The bf16 kernels of notebooks 12 (tuned mma.sync), 13 (each Hopper step, Gluon) and 14 (tuned per shape): {notebook: [Kernel]}."
    out = {}
    if '12' in nb:
        fn = functools.partial(nb['12'].matmul_tensor_cores, precision='bf16')
        out['12'] = [Kernel('mma.sync, tuned, bf16 (12)', '12', fn, 'bfloat16', None)]
    if '13' in nb:
        out['13'] = [Kernel(f'{label} (13)', '13', kernel, 'bfloat16', None) for label, kernel in nb['13'].hopper_ladder().items()]
        out['13'].append(Kernel('Gluon, 3 stages (13)', '13', nb['13'].matmul_gluon, 'bfloat16', None))
    if '14' in nb:
        out['14'] = [Kernel('tuned per shape (14)', '14', nb['14'].TUNED, 'bfloat16', None)]
    return out


def course_kernels(up_to=NOTEBOOKS[-1], dtypes=('float32', 'bfloat16'), modules=None):
    """[Kernel] for every GPU kernel of the notebooks up to `up_to` (a notebook number as a string), in the order they
    are taught, of the given dtypes. Only the notebooks needed are imported; `modules` ({'10': module, ...}) gives
    some already imported, whose state (a tuner's choices, say) the caller shares: each import_notebook is a fresh
    module. bf16 kernels need a GPU with tensor cores (notebook 13's, a Hopper GPU): those the GPU here cannot run
    are left out (`runnable`)."""
    from .notebook_import import import_notebook
    modules = modules or {}
    nb = {n: modules[n] if n in modules else import_notebook(n) for n in NOTEBOOKS if n <= up_to}
    found = {}                                   # notebook -> its kernels (fp32 up to 11, bf16 in 12 and 13)
    if 'float32' in dtypes: found.update(_fp32_kernels(nb))
    if 'bfloat16' in dtypes: found.update(_bf16_kernels(nb))
    return [k for n in NOTEBOOKS if n in found for k in found[n] if runnable(k)]


def runnable(kernel):
    "Whether this GPU can run `kernel`: bf16 tensor cores from compute capability 8.0, notebooks 13 and 14's on 9.0 only."
    if kernel.dtype == 'float32': return True
    import torch
    if not torch.cuda.is_available(): return False
    major = torch.cuda.get_device_capability()[0]
    return major >= 9 if kernel.notebook in HOPPER_NOTEBOOKS else major >= 8


HOPPER_NOTEBOOKS = ('13', '14')   # their kernels use wgmma and TMA: compute capability 9.0 only

REFERENCES = {'float32': ('cuBLAS fp32 (TF32 off)', 'fp32'), 'bfloat16': ('cuBLAS bf16', 'bf16')}
TF32_MARK = 'cuBLAS TF32 (tensor cores)'


class Bar(NamedTuple):
    name: str
    notebook: str       # '' for cuBLAS
    dtype: str
    tflops: float       # the operation count over the median time
    spread: object      # a course.timing.Spread of the time per call, ms


def climb(up_to, shape=CLIMB_SHAPE, rounds=10):
    """[Bar] of every kernel up to notebook `up_to` and cuBLAS on `shape`: one fair comparison per dtype (the kernels
    of that dtype, interleaved with cuBLAS in it; TF32 as a mark beside the float32 kernels). Needs a GPU."""
    from .reduced_precision import cublas
    from .roofline import matmul_flop
    from .timing import compare_fairly
    kernels = course_kernels(up_to)
    bars = []
    for dtype in ('float32', 'bfloat16'):
        mine = [k for k in kernels if k.dtype == dtype]
        if not mine: continue
        reference, precision = REFERENCES[dtype]
        refs = {reference: cublas(precision), **({TF32_MARK: cublas('tf32')} if dtype == 'float32' else {})}
        times = compare_fairly({**{k.name: k.fn for k in mine}, **refs}, *shape, rounds=rounds, back_to_back=1,
                               progress=False, dtype=dtype)
        flop = matmul_flop(*shape)
        bars += [Bar(k.name, k.notebook, dtype, flop / times[k.name].median / 1e9, times[k.name]) for k in mine]
        bars += [Bar(name, '', dtype, flop / times[name].median / 1e9, times[name]) for name in refs]
    return bars


def climb_lines(bars):
    "One line per kernel: its TFLOP/s and its speed as a fraction of cuBLAS's in its precision."
    refs = {b.dtype: b for b in bars if b.name in {r for r, _ in REFERENCES.values()}}
    lines = []
    for b in bars:
        if not b.notebook: continue
        ref = refs[b.dtype]
        lines.append(f"{b.name:42s} {b.tflops:7.1f} TFLOP/s  {b.tflops / ref.tflops:5.2f}x {ref.name}'s speed")
    return lines


COLOURS = {'float32': '#4878a8', 'bfloat16': '#d08838'}
COLOUR_NAMES = {'float32': 'blue', 'bfloat16': 'orange'}       # as the legend names COLOURS
DTYPE_NAMES = {'float32': 'float32', 'bfloat16': 'bf16'}


def climb_chart(bars, shape=CLIMB_SHAPE, title=None):
    """Horizontal bars of TFLOP/s, one per kernel in the order taught (the newest at the bottom), coloured by
    precision; a dashed line for cuBLAS in each precision, a dotted one for TF32. Returns the figure."""
    import matplotlib.pyplot as plt
    kernels = [b for b in bars if b.notebook]
    refs = [b for b in bars if not b.notebook]
    h, k, w = shape
    low = min(b.tflops for b in bars) / 1.5                    # where the bars start on the log axis
    fig, ax = plt.subplots(figsize=(10, 0.34 * len(kernels) + 1.8), layout='constrained')
    for i, b in enumerate(kernels):
        ax.barh(i, b.tflops - low, left=low, color=COLOURS[b.dtype], edgecolor='k', lw=0.4)
        ax.text(b.tflops, i, f' {b.tflops:.0f}', va='center', fontsize=8)
    for j, r in enumerate(refs):
        style = ':' if r.name == TF32_MARK else '--'
        colour = '0.4' if r.name == TF32_MARK else COLOURS[r.dtype]
        ax.axvline(r.tflops, color=colour, ls=style, lw=1.2)
        ax.text(r.tflops, -0.9 - 0.7 * (j % 2), f'{r.name}: {r.tflops:.0f}', ha='center', va='bottom', fontsize=8,
                color=colour, bbox=dict(facecolor='white', edgecolor='none', pad=1))
    ax.set_yticks(range(len(kernels)), [b.name for b in kernels], fontsize=8.5)
    ax.set_ylim(len(kernels) - 0.5, -2.4)                      # the first taught at the top, room for the labels
    ax.set_xscale('log')                                       # 1 to 1000 TFLOP/s: every step stays visible
    colours = ', '.join(f"{COLOUR_NAMES[d]}: {DTYPE_NAMES[d]}" for d in COLOURS if any(b.dtype == d for b in kernels))
    ax.set_xlabel(f'TFLOP/s on a log scale, median over the rounds (higher is better); {colours}')
    ax.set_title(title or f"The climb so far: every kernel of the course on {h}x{k} @ {k}x{w}", fontsize=10)
    ax.set_xlim(low, max(b.tflops for b in bars) * 2.2)
    plt.close(fig)
    return fig


def show_climb(up_to, shape=CLIMB_SHAPE):
    "Time the climb up to notebook `up_to` (`climb`), print one line per kernel, and return its chart."
    bars = climb(up_to, shape)
    print('\n'.join(climb_lines(bars)))
    return climb_chart(bars, shape, title=f"The climb up to notebook {up_to}: every kernel of the course so far, "
                                            f"{shape[0]}x{shape[1]} @ {shape[1]}x{shape[2]}")

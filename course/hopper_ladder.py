"""Notebook 13's plumbing: its CUDA C++ read from course/kernels/hopper/, a step made a compiled kernel and a matmul,
a step's kernel as text, and the lines that time the ladder.

The notebook keeps what it teaches: the registry of its steps (HOPPER_STEPS, step -> label, in the order taught) and
`wgmma_function`, which writes out the wgmma wrappers. It passes them here: `step_variant` takes the device code that
precedes a step's kernel (the notebook's HOPPER_SOURCE, with those wrappers), and the functions that print a step take
its label. Nothing here imports a notebook.

- `read_kernel(name)`: a file of course/kernels/hopper/ less its opening comment; HOPPER_PIECES, HOPPER_COMMON,
  TMA_WGMMA_KERNEL, SPECIALIZED_KERNEL, STREAM_K_PIECES and HOPPER_LAUNCHER are the files as the steps compile them.
- `kernel_piece(name)` / `show_pieces(*names)`: one function or struct of those files, with its comment.
- `step_variant(step, source, ...)`: the TemplateVariant of a step, its switches set (the step's template
  parameters), with its tile sizes and shared memory; `step_listing_of` is that kernel as the compiler sees it.
- `StepMatmul`: a step's kernel as a safe matmul (inputs checked, shapes TMA cannot copy sent to a fallback).
- `time_against_references`, `print_against_cublas`, `print_step_verdicts`, `step_lines`: the ladder's one measurement and
  its lines.
"""
import math, re
from pathlib import Path

from . import stream_k
from .cuda_library import current_gpu, current_stream_handle
from .cuda_toolkit import hopper_available
from .hopper_dispatch import dispatch_bf16
from .step_listings import specialize
from .template_variants import TemplateVariant, kept_workspace
from .timing import compare_fairly, step_line, verdict

HOPPER_KERNEL_DIR = Path(__file__).resolve().parent / 'kernels' / 'hopper'     # the steps' CUDA C++
HOPPER_FILES = ('pieces.cuh', 'common.cuh', 'stream_k.cuh', 'tma_wgmma.cu', 'specialized.cu', 'launcher.cu')
TF32_FILES = ('tf32.cu', 'tf32_launcher.cu')       # notebook 14's TF32 wgmma kernel (course.hopper_tf32)


def read_kernel(name):
    """The CUDA C++ of course/kernels/hopper/`name` as the steps compile it: the file less its opening comment (the
    lines before its first blank line, which say what the file holds and which steps use it)."""
    opening, _, code = (HOPPER_KERNEL_DIR / name).read_text(encoding='utf-8').partition('\n\n')
    if not all(line.startswith('//') for line in opening.splitlines()):
        raise ValueError(f"{name} must open with a comment, then a blank line")
    return '\n' + code


HOPPER_PIECES, HOPPER_COMMON = read_kernel('pieces.cuh'), read_kernel('common.cuh')
TMA_WGMMA_KERNEL, SPECIALIZED_KERNEL = read_kernel('tma_wgmma.cu'), read_kernel('specialized.cu')
# Step 8's pieces, after two constants of course.stream_k's model
STREAM_K_PIECES = f'''
// ---- Step 8: stream-K for the last round (the model and the rule: course.stream_k) ----
constexpr int SK_MIN_STRETCH = {stream_k.MIN_STRETCH};   // and the hand-over's cost: the launcher's SK_HANDOVER
constexpr int SK_POLLS = {stream_k.FIRST_CLUSTER_POLLS};   // how long a unit's first cluster looks for the others
''' + read_kernel('stream_k.cuh')
# The launcher: the lines a TemplateVariant fills in for each step (str.format's fields: the kernel instantiated with
# the step's parameters, and its constants), then launcher.cu, its braces doubled so that format leaves them be.
HOPPER_LAUNCHER = r'''
static const auto kernel = {kernel}<{args}>;
static const int THREADS = {threads}, SHARED = {shared}, BM = {bm}, BN = {bn}, CLUSTER = {CLUSTER};
static const bool PERSISTENT = {PERSISTENT}, STREAM_K = {STREAM_K};
static const int SK_HANDOVER = {SK_HANDOVER};     // step 8: the hand-over's cost in stages of K (course.stream_k)
''' + read_kernel('launcher.cu').replace('{', '{{').replace('}', '}}')


def kernel_piece(name, **switches):
    """(file, text) of the function or struct `name` of HOPPER_FILES (or TF32_FILES), with the comment lines right above it; with
    `switches` (STREAM_K=False, say), the `if constexpr` on them evaluated, as in the step listings (a template keeps
    its template line, the switches written above it)."""
    for file in HOPPER_FILES + TF32_FILES:
        lines = read_kernel(file).split('\n')
        found = [i for i, line in enumerate(lines) if re.match(
            rf'(template <[^>]*> )?(__device__ |static |extern "C" |struct )[^(=;]*\b{name}\s*[({{]', line)]
        if not found: continue
        start = end = found[0]
        code = re.sub(r'"(\\.|[^"\\])*"', '', lines[end])              # its inline PTX's braces left out
        if not ('{' in code and code.count('{') == code.count('}')):    # not on one line: down to its closing }
            while not lines[end].startswith('}'): end += 1
        start -= bool(re.fullmatch(r'template <[^>]*>', lines[start - 1]))       # its template line
        while start > 0 and lines[start - 1].startswith('//'): start -= 1
        text = '\n'.join(lines[start:end + 1]) + '\n'
        used = {k: v for k, v in switches.items() if re.search(rf'\b{k}\b', text)}
        return file, specialize(text, used, keep_template=True) if used else text
    raise ValueError(f"no function or struct {name!r} in course/kernels/hopper/ ({', '.join(HOPPER_FILES + TF32_FILES)})")


def show_pieces(*names, **switches):
    "Print the pieces `names` of the Hopper files (kernel_piece's), each under the name of its file."
    shown, last = None, ''
    for name in names:
        file, text = kernel_piece(name, **switches)
        if shown and (file != shown or text.count('\n') > 1 or last.count('\n') > 1): print()   # not between one-liners
        if file != shown: print(f"// course/kernels/hopper/{file}")
        print(text, end='')
        shown, last = file, text


STEPS = ('tma', 'pipelined', 'in_flight', 'specialized', 'persistent', 'cluster', 'store', 'overlap', 'streamk')
LATER_STEPS = ('consumers_in_flight',)              # step 8 with a wgmma group in flight in its consumers
SPECIALIZED_STEPS = STEPS[3:] + LATER_STEPS         # the steps of specialized.cu's template


def step_variant(step, source, BN=None, STAGES=None, GROUP=8, STORE_BUFFERS=None, HANDOVER=None, IN_FLIGHT=None):
    """The TemplateVariant of one step (a key of notebook 13's HOPPER_STEPS, or 'consumers_in_flight': step 8 with
    IN_FLIGHT), `source` the device code before its kernel: 128 x BN tiles (BN 128 for steps 1-2b, 256 after), 64 of
    K per stage, STAGES stages (1 for step 1, 4 after), GROUP tile-rows per group of the tile order; steps 6 on stage
    their results through STORE_BUFFERS boxes of 64 x 64 per consumer (1: 16 KiB in all); step 8 on shares the last
    round along K where course.stream_k's rule says so, with a hand-over of HANDOVER stages (its HANDOVER_STAGES unless
    said). IN_FLIGHT: wgmma groups left running while the next is issued (1 for steps 2b and 'consumers_in_flight',
    else 0; at most 1 from step 3 on)."""
    if step in ('tma', 'pipelined', 'in_flight'):
        BN, STAGES = BN or 128, STAGES or (1 if step == 'tma' else 4)
        in_flight = int(step == 'in_flight') if IN_FLIGHT is None else IN_FLIGHT
        return _variant(source, 'tma_wgmma', 128, STAGES, dict(BM=128, BN=BN, STAGES=STAGES, GROUP=GROUP, IN_FLIGHT=in_flight,
                        CLUSTER=1, PERSISTENT=False, STREAM_K=False, SK_HANDOVER=0))
    if step not in SPECIALIZED_STEPS: raise ValueError(f"step must be one of {list(STEPS + LATER_STEPS)}, got {step!r}")
    later = lambda first: SPECIALIZED_STEPS.index(step) >= SPECIALIZED_STEPS.index(first)   # this step has that one's change
    return specialized_variant(source, BN=BN or 256, STAGES=STAGES or 4, GROUP=GROUP, PERSISTENT=later('persistent'),
                               CLUSTER=2 if later('cluster') else 1, STORE_BUFFERS=(STORE_BUFFERS or 1) if later('store') else 0,
                               OVERLAP=later('overlap'), STREAM_K=later('streamk'), HANDOVER=HANDOVER,
                               IN_FLIGHT=bool(step == 'consumers_in_flight' if IN_FLIGHT is None else IN_FLIGHT))


def specialized_variant(source, BN=256, STAGES=4, CONSUMERS=2, GROUP=8, PERSISTENT=True, CLUSTER=2, STORE_BUFFERS=1,
                        OVERLAP=True, STREAM_K=True, HANDOVER=None, IN_FLIGHT=False, PINGPONG=False):
    """A TemplateVariant of specialized.cu's template with any choice of its switches (steps 3 to 10 are some of them;
    course.hopper_tuning picks among others): tiles of 64 x CONSUMERS rows and BN columns (with PINGPONG, step 10: 64
    rows, each consumer its own tiles, which needs OVERLAP off), the rest as step_variant says."""
    params = dict(BM=64 if PINGPONG else 64 * CONSUMERS, BN=BN, STAGES=STAGES, CONSUMERS=CONSUMERS, GROUP=GROUP, PERSISTENT=PERSISTENT,
                  CLUSTER=CLUSTER, STORE_BUFFERS=STORE_BUFFERS, OVERLAP=OVERLAP, STREAM_K=STREAM_K,
                  IN_FLIGHT=IN_FLIGHT, PINGPONG=PINGPONG,
                  SK_HANDOVER=(stream_k.HANDOVER_STAGES if HANDOVER is None else HANDOVER) if STREAM_K else 0)
    return _variant(source, 'specialized', 128 * (CONSUMERS + 1), STAGES, params)


def _variant(source, name, threads, stages, params):
    "The TemplateVariant of kernel `name` with `params`, and the shared memory they need."
    results = params.get('CONSUMERS', 0) * params.get('STORE_BUFFERS', 0) * 64 * 128   # steps 6 on: boxes of results, bf16
    barriers = stages * 2 + 2 if name == 'specialized' else stages    # specialized: full, empty, and 2 turns (step 10)
    shared = 1024 + stages * (params['BM'] + params['BN']) * 64 * 2 + results + 8 * barriers + 16   # 1024: room to align
                                                     # the tiles on 1024 bytes; 16: step 8's ints per consumer
    body = TMA_WGMMA_KERNEL if name == 'tma_wgmma' else SPECIALIZED_KERNEL
    return TemplateVariant(source + body, name, threads, shared, dtype='bfloat16', out_dtype='bfloat16',
                           launcher=HOPPER_LAUNCHER, arch='sm_90a', **params)


def step_listing_of(variant, title):
    """The kernel `variant` (step_variant's) compiles, whole, under the comment `title`: its template with the switches
    evaluated and what only the other steps use left out (course.step_listings.specialize, prune=True)."""
    body = TMA_WGMMA_KERNEL if variant.name == 'tma_wgmma' else SPECIALIZED_KERNEL
    used = {k: v for k, v in variant.params.items() if re.search(rf'\b{k}\b', body)}
    return specialize(body, used, title=title, prune=True)


STREAM_K_WORKSPACES = {}     # step 8's workspaces, one per (GPU, stream, kernel): see kept_workspace


class StepMatmul:
    """C = A B (bf16 in and out, fp32 sums) by `kernel`, one step's TemplateVariant (step_variant's); shapes TMA cannot
    copy go to `fallback`. Needs a Hopper GPU."""
    def __init__(self, step, kernel, fallback):
        self.step, self.kernel, self.fallback = step, kernel, fallback
        self.workspace_sizes = {}          # GPU -> (bytes of workspace, bytes of them zeroed when made), asked once
        self.params, self.source = kernel.params, kernel.source      # what a tuning result names (course.tuning_cache)
        self.missing = {}                  # GPU -> None where it can run the kernel, else why not (unavailable)

    def __call__(self, m, n):
        return dispatch_bf16(m, n, self.on_tma, self.fallback, self.unavailable)

    def on_tma(self, m, n):
        """The step's own kernel, on inputs already checked whose rows TMA can copy; step 8 with a workspace of this
        stream's (its counters at 0 when made, and back at 0 after every launch)."""
        import torch
        (h, k), w = m.shape, n.shape[1]
        out = torch.empty(h, w, device=m.device, dtype=torch.bfloat16)
        module, device = self.kernel.build()._module, m.get_device()
        if device not in self.workspace_sizes: self.workspace_sizes[device] = module.workspace_size(0), module.workspace_size(1)
        (size, zeroed), stream = self.workspace_sizes[device], current_stream_handle(device)
        def make(size):
            work = torch.empty(size, device=m.device, dtype=torch.uint8)
            work[:zeroed].zero_()
            return work
        work = kept_workspace(STREAM_K_WORKSPACES, (device, stream, module.path), size, make) if size else None
        # the library's function without its per-argument checks: dispatch_bf16 has checked the tensors, and on a
        # product of a few hundredths of a millisecond the checks' microseconds would be a good part of a call
        error = module.unchecked('matmul')(m.data_ptr(), n.data_ptr(), out.data_ptr(), h, w, k,
                                           work.data_ptr() if size else None, size, stream)
        if error: module.raise_if_error('matmul', error)
        return out

    def unavailable(self):
        "None on a Hopper GPU; elsewhere the sentence that says why this step cannot run (asked once per GPU)."
        import torch
        device = current_gpu()
        if device not in self.missing:
            self.missing[device] = None if hopper_available() else (
                f"step {self.step!r} uses wgmma, which needs a Hopper GPU (compute capability 9.0); "
                f"this one is {torch.cuda.get_device_name()}")
        return self.missing[device]

    def launch_plan(self, h, k, w):
        """What the launcher decides for h x k @ k x w on this GPU: (clusters launched, units done whole, clusters
        that share the rest along K: 0 without stream-K)."""
        return tuple(self.kernel.build()._module.launch_plan(h, w, k, which) for which in range(3))

    def __repr__(self): return f"HopperMatmul({self.step!r}: {self.kernel})"


def time_against_references(kernels, shape, rounds=20):
    """{name: Spread} of cuBLAS bf16, Triton (where installed) and `kernels` ({name: matmul}) on one shape
    (h, k, w), measured together (course.timing.compare_fairly): each name's verdict against another holds within
    this one measurement."""
    from .reduced_precision import cublas
    from .triton_matmul import matmul_triton_bf16, triton_unavailable
    references = {'cuBLAS bf16': cublas('bf16')}
    if not triton_unavailable(): references['Triton bf16, autotuned'] = matmul_triton_bf16
    return compare_fairly({**references, **kernels}, *shape, rounds=rounds, back_to_back=3, progress=False,
                          dtype='bfloat16')


def print_against_cublas(shape, times, peak_tflops):
    "A line per kernel of `times` ({name: Spread}): its spread, TFLOP/s, share of `peak_tflops` and speed over cuBLAS's."
    flop, reference = 2 * math.prod(shape), times['cuBLAS bf16'].median
    width = max(32, *(len(name) for name in times))
    print(f"{shape[0]}x{shape[1]} @ {shape[1]}x{shape[2]}")
    for name, t in times.items():
        rate = flop / t.median / 1e9
        print(f"  {name:{width}s} {str(t):34s} {rate:5.0f} TFLOP/s {rate / peak_tflops:5.0%} of peak "
              f"{reference / t.median:5.2f}x cuBLAS's speed")


def print_step_verdicts(times, labels):
    """Each step of `labels` (in order) against the step before it and against cuBLAS bf16: the course's verdict
    (course.timing.verdict)."""
    for before, step in zip([None] + labels[:-1], labels):
        line = f"  {step:32s} against cuBLAS: {verdict(times[step], times['cuBLAS bf16']):7s}"
        if before: line += (f"  against step {before.split('.')[0]}: {verdict(times[step], times[before]):7s} "
                            f"({times[before].median / times[step].median:.2f}x its speed)")
        print(line)


def shape_name(shape):
    "4096³ for a cube, else 256x8192x4096."
    return f"{shape[0]}³" if len(set(shape)) == 1 else "x".join(map(str, shape))


def step_lines(times_by_shape, label, before=None, before_name=None):
    """A line per shape of the ladder's measurement (times_by_shape: {shape: {name: Spread}}) that timed `label`:
    course.timing.step_line, its time against cuBLAS bf16 and against `before` (called `before_name`). Where `label`
    was not measured, one line that says so."""
    measured = {shape: times for shape, times in (times_by_shape or {}).items() if label in times}
    if not measured:
        return [f"{label}: not measured in this run (section 5 times the ladder first, on a Hopper GPU)"]
    lines = []
    for shape, times in measured.items():
        named = {label: times[label], 'cuBLAS': times.get('cuBLAS bf16')}
        if before in times: named[before_name or before] = times[before]
        named = {name: t for name, t in named.items() if t is not None}
        lines.append(f"{shape_name(shape)}: " + step_line(named, label, before=before_name or before, reference='cuBLAS',
                                                          flop=2 * math.prod(shape)))
    return lines

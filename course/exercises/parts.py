"""The tools each exercise's check is made of: running the learner's code with a time budget, comparing
with torch, limits on memory traffic, where the barriers stand, compiling CUDA C and reading its machine
code, compute-sanitizer, timing against a target. Each failure is one sentence a learner can act on,
raised as `NotYet`; what a machine cannot check is said in one line (`Report.skip`)."""
import contextlib, math, re, subprocess, sys, tempfile, textwrap
from pathlib import Path

from ..checked_simulator import KernelFault
from .learner_code import LEARNER_FILES, function_tree, learner_frames, where
from .verdict import NotYet
from .watchdog import KernelTimeout, Watchdog

ROOT = Path(__file__).resolve().parents[2]

# How CUDA reports a kernel that faulted (as opposed to a launch refused with an error code).
MEMORY_FAULT = (r'illegal memory access|misaligned address|unspecified launch failure|illegal instruction|'
                r'operation not supported on global/shared address space|out of memory|CUDA_ERROR_ILLEGAL')

# Seconds one call of the learner's Python code may run before it is stopped as a loop that never ends.
PYTHON_BUDGET_S = 15


# --------------------------------------------------------------------------------------------------
# Calling the learner's code
# --------------------------------------------------------------------------------------------------

def learner_line(exc):
    "' at line N of the `#| exercise ...` cell: `<code>`' for the innermost frame of the learner's code, or ''."
    frames = learner_frames(exc.__traceback__)
    return f" at {where(frames[-1].filename, frames[-1].lineno)}" if frames else ''


def said_by(exc):
    "The first line of an exception's message, '' if it has none, or a sentence when turning it into text fails too."
    try: text = str(exc).strip()
    except Exception as e: return f"(its message could not be shown: str() of it raised {type(e).__name__})"
    return text.splitlines()[0] if text else ''


@contextlib.contextmanager
def running(what, budget_s=PYTHON_BUDGET_S):
    """Run the learner's code, stopped after budget_s seconds (a loop that never ends); turn what it
    raises into one sentence."""
    from .isolation import KERNEL_STEP_S, progress
    progress(f"running {what}", KERNEL_STEP_S)
    try:
        with Watchdog(budget_s, what=what):
            yield
    except NotYet: raise
    except KernelTimeout as e: raise NotYet(f"{what}: {e}") from None
    except KernelFault as e: raise NotYet(f"{what}: {e}") from None
    except NotImplementedError as e: raise NotYet(f"{what} is not written yet ({said_by(e) or 'NotImplementedError'})") from None
    except SystemExit as e:        # exit() or sys.exit() in the learner's code: a verdict, not the end of the check
        said = f" ({e.code})" if e.code not in (None, 0) else ''
        raise NotYet(f"{what} called exit(){said}{learner_line(e)}: return a value instead, or raise an error "
                     f"that says what went wrong") from None
    except KeyboardInterrupt: raise         # Ctrl-C stops the check
    except BaseException as e:              # any other exception, a BaseException of the learner's own too
        msg = said_by(e)
        if re.search(MEMORY_FAULT, msg):
            from .isolation import in_child
            after = ("The check ran it in a separate process, so your notebook's GPU is unharmed" if in_child() else
                     "This process's CUDA context may be unusable now: restart the kernel before more GPU work")
            raise NotYet(f"{what}: the kernel crashed the GPU ({msg}): most likely it read or wrote outside a buffer "
                         f"(check its bound checks; compute-sanitizer's memcheck names the line). {after}") from None
        raise NotYet(f"{what} raised {type(e).__name__}{learner_line(e)}" + (f": {msg}" if msg else '')) from None


def need(ns, *names):
    "The learner's definitions of `names` (from the notebook), or a sentence saying which one is missing."
    missing = [n for n in names if n not in ns]
    if missing: raise NotYet(f"define {', '.join(missing)}: run the exercise's cell first")
    return [ns[n] for n in names]


def need_function(ns, name, arguments):
    "The learner's function `name`, or a sentence saying it is missing or is not a function of `arguments` (as text)."
    fn, = need(ns, name)
    if not callable(fn): raise NotYet(f"{name} is a {type(fn).__name__}; define it as a function of {arguments}")
    return fn


def shape_text(shape): return ' x '.join(map(str, shape))


def compare(got, expected, what, atol=1e-4, rtol=1e-4):
    "Fail with the first wrong element (its index, what was expected and what came) unless got matches expected."
    import torch
    if not isinstance(got, torch.Tensor): raise NotYet(f"{what}: returned {type(got).__name__}, not a tensor")
    if tuple(got.shape) != tuple(expected.shape):
        raise NotYet(f"{what}: the result is {shape_text(got.shape)}, expected {shape_text(expected.shape)}")
    got, expected = got.detach().float().cpu(), expected.detach().float().cpu()
    bad = ~torch.isclose(got, expected, atol=atol, rtol=rtol) | torch.isnan(got)
    if not bad.any(): return
    first = tuple(int(i) for i in bad.nonzero()[0])
    g, e = got[first].item(), expected[first].item()
    got_text = 'NaN: never written (or computed from a value never written)' if math.isnan(g) else f"{g:.6g}"
    raise NotYet(f"{what}: element {list(first)} is {got_text}, expected {e:.6g} "
                 f"({int(bad.sum())} of {bad.numel()} elements wrong)")


def at_most(trace, where, kind, limit, why):
    """Fail if any one thread (or block) made more than `limit` accesses of this kind to `where`: a memory
    space ('global', 'shared') or a global buffer by name ('m')."""
    from ..checked_simulator import who
    most, (block, thread) = trace.most(where, kind)
    if most > limit:
        what = f"{where} values" if where in ('global', 'shared') else f"values of {where} from global memory"
        raise NotYet(f"{who(block, thread)} {kind}s {most} {what}; {why} needs at most {limit}")
    return most


# --------------------------------------------------------------------------------------------------
# CUDA C: compiling, the machine code, the GPU
# --------------------------------------------------------------------------------------------------

def gpu_here():
    import torch
    return torch.cuda.is_available()


def cell_place(report, src, name):
    """place(n): 'line N of the `#| exercise 05.1` cell' for line n of `src`, the CUDA C source held in the
    learner's variable `name` (a string in their cell, often with a prelude in front)."""
    from .learner_code import cell_line
    cell = report.work.cell_defining(name) if report.work else None
    lines = src.splitlines()
    def place(n):
        own = cell_line(cell, lines, n) if cell else None
        return f"line {own} of {cell.label}" if own else f"line {n} of {name}"
    return place


def compiled(report, src, what):
    """The CudaModule of `src` (the learner's variable `what`), None where nvcc is missing (said in the
    report). A compile error is a failure that points at the line of the learner's cell. Barriers inside
    branches and loops that never end are found in the source before anything runs."""
    from ..compile_errors import CudaCompileError
    from ..cuda_library import compile_cuda
    from ..cuda_toolkit import nvcc_available
    from .barrier_placement import cuda_barrier_problems
    from .endless_loops import endless_loop_problems
    if not isinstance(src, str): raise NotYet(f"{what} is a {type(src).__name__}; it must be a string of CUDA C")
    place = cell_place(report, src, what)
    problems = cuda_barrier_problems(src, place=place) + endless_loop_problems(src, place)
    if problems: raise NotYet(problems[0])
    if not nvcc_available():
        report.skip("compiling the CUDA C, and running it: correctness, races, out-of-bounds accesses and speed "
                    "(nvcc is not installed)")
        return None
    from .isolation import progress
    progress(f"compiling {what}")
    try: mod = compile_cuda(src)
    except CudaCompileError as e:
        raise NotYet(f"nvcc cannot compile {what}:\n{textwrap.indent(compile_error_text(str(e), src, place), '        ')}") from None
    report.ok(f"{what} compiles")
    return mod


def compile_error_text(text, src, place):
    "nvcc's short errors with each 'your source, line N' or 'kernel.cu, line N' turned into the line of the learner's cell."
    lines = src.splitlines()
    def fix(m):
        n = int(m.group(2))
        return place(n) if 0 < n <= len(lines) else m.group(0)
    text = re.sub(r'(your source|[\w.-]+\.cu), line (\d+)', fix, text)
    text = re.sub(r'(?m)^(\s*)\d+ \| ', r'\1 | ', text)
    if 'expected a ";"' in text:
        text += "\n(nvcc notices a missing `;` only at the next token: look at the end of the line before too)"
    return text     # the code line itself, without the number that is not the cell's


# What to look for in a kernel's machine code (SASS; PTX where cuobjdump is missing), by purpose.
MACHINE_CODE = {
    'SASS': {'multiply-adds': r'\bFFMA\b', 'barriers': r'\bBAR\.SYNC', 'shared stores': r'\bSTS(?:\.\d+)?\b',
             'shared loads': r'\bLDS(?:\.\d+)?\b', 'global loads': r'\bLDG\b', 'local memory': r'\b(?:LDL|STL)\b',
             '128-bit shared loads': r'\bLDS\.128\b', 'global stores': r'\bSTG\b'},
    'PTX': {'multiply-adds': r'\bfma\.rn\.f32\b', 'barriers': r'\bbar\.sync\b|\bbarrier\.sync\b', 'shared stores': r'\bst\.shared\b',
            'shared loads': r'\bld\.shared\b', 'global loads': r'\bld\.global\b', 'local memory': r'\b(?:ld|st)\.local\b',
            '128-bit shared loads': r'\bld\.shared\.v4', 'global stores': r'\bst\.global\b'},
}


def machine_code(src, kernel):
    "(kind, listing) of the kernel whose mangled name contains `kernel`, made by nvcc (no GPU needed)."
    from ..disassembly import cuda_disassembly, kernel_listing
    kind, text = cuda_disassembly(src)
    return kind, kernel_listing((kind, text), kernel)


def count_in(kind, listing, what):
    return len(re.findall(MACHINE_CODE[kind][what], listing))


def cuda_time(fn, *args):
    from ..timing import cuda_time_ms
    return cuda_time_ms(fn, *args, warmup=3, reps=30)


def faster_than(report, fn, reference, args, target, what, reference_name):
    "Time fn and reference on args; fail unless fn takes at most `target` times the reference's time."
    from .isolation import KERNEL_STEP_S, progress
    progress(f"timing {what}", KERNEL_STEP_S)
    fn(*args); reference(*args)
    t, r = cuda_time(fn, *args), cuda_time(reference, *args)
    ratio = t / r
    if ratio > target:
        raise NotYet(f"{what}: {t:.3f} ms, {ratio:.2f}x the time of {reference_name} ({r:.3f} ms), slower than the "
                     f"target of {target:.2f}x")
    line = (f"{what}: {t:.3f} ms, {ratio:.2f}x the time of {reference_name} ({r:.3f} ms); the target is "
            f"{target:.2f}x")
    report.ok(line)


SANITIZER_DRIVER = r'''
import sys
import torch
sys.path.insert(0, {root!r})
from course.cuda_library import compile_cuda
mod = compile_cuda(open({src_path!r}).read())
torch.manual_seed(0)
{calls}
torch.cuda.synchronize()
'''


def sanitized(report, src, calls, tools=('memcheck', 'racecheck')):
    """Run `calls` (Python using `mod`, the compiled src, and torch) under compute-sanitizer's memcheck
    (out-of-bounds accesses) and racecheck (shared-memory races), in a child process."""
    from ..cuda_toolkit import cuda_tool
    sanitizer = cuda_tool('compute-sanitizer')
    if not sanitizer:
        report.skip("out-of-bounds accesses and races on the GPU (compute-sanitizer is not installed)")
        return
    from .isolation import progress
    progress("running compute-sanitizer")
    with tempfile.TemporaryDirectory() as tmp:
        src_path, script = Path(tmp) / 'kernel.cu', Path(tmp) / 'driver.py'
        src_path.write_text(src)
        script.write_text(SANITIZER_DRIVER.format(root=str(ROOT), src_path=str(src_path), calls=textwrap.dedent(calls)))
        for tool in tools:
            res = subprocess.run([sanitizer, f'--tool={tool}', '--report-api-errors=no', '--error-exitcode=99',
                                  sys.executable, str(script)], capture_output=True, text=True, timeout=300)
            out = res.stdout + res.stderr
            if res.returncode == 99 or 'ERROR SUMMARY: 0 errors' not in out and 'RACECHECK SUMMARY: 0 hazards' not in out:
                raise NotYet(sanitizer_sentence(tool, out, res.returncode))
    report.ok(f"compute-sanitizer finds no {' and no '.join({'memcheck': 'out-of-bounds access', 'racecheck': 'race'}[t] for t in tools)}")


def sanitizer_sentence(tool, out, code):
    "The first finding of compute-sanitizer's output, shortened to what a learner needs."
    lines = [l.replace('========= ', '').strip() for l in out.splitlines() if l.startswith('=========')]
    lines = [l for l in lines if l and not l.startswith(('Saved host backtrace', 'Host Frame', 'Device Frame'))]
    if tool == 'racecheck':
        hit = next((l for l in lines if 'hazard' in l.lower() or 'race' in l.lower()), '')
        return ("a barrier (__syncthreads()) is missing: compute-sanitizer's racecheck reports a shared-memory race"
                + (f": {hit}" if hit else ''))
    from ..memcheck import memcheck_findings
    errors, _ = memcheck_findings(out)
    if not errors: return f"compute-sanitizer's {tool} failed (exit code {code}): " + ' / '.join(lines[:4])
    return "out of bounds on the GPU: " + '; '.join(errors[0][:4])


# --------------------------------------------------------------------------------------------------
# Where the barriers stand, read from the learner's Python kernel
# --------------------------------------------------------------------------------------------------

def barriers_in_place(report, kernel, what):
    """Fail with the line if a barrier of a Python or Numba thread kernel stands inside an `if`, after an
    early return, or where the loop over tiles needs one and has none."""
    from .barrier_placement import python_barrier_problems
    tree, first = function_tree(kernel)
    if tree is None:
        return report.skip(f"where the barriers of {what} stand (its source could not be read)")
    code = getattr(getattr(kernel, 'py_func', None) or getattr(kernel, 'fn', None) or kernel, '__code__', None)
    label = LEARNER_FILES.get(code.co_filename, 'its cell') if code else 'its cell'
    problems = python_barrier_problems(tree, first)
    if problems: raise NotYet(f"{what} ({label}): {problems[0]}")
    report.ok(f"every barrier of {what} is reached by all threads, between each fill of shared memory and its reads")

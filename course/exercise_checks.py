"""The tools each exercise's check is made of: comparing with torch, limits on memory traffic, reading
the machine code, compute-sanitizer, timing against a target. Each failure is one sentence a learner can
act on, raised as `NotYet`; what a machine cannot check is said in one line (`Report.skip`)."""
import contextlib, math, re, subprocess, sys, tempfile, textwrap, traceback
from pathlib import Path

from .checked_simulator import KernelFault

ROOT = Path(__file__).resolve().parents[1]


class NotYet(Exception):
    "The learner's work does not pass a check yet; the message says what is wrong."


class Report:
    "The lines of one exercise's check: what passed, what failed, what this machine could not check."
    def __init__(self, exercise_id, title):
        self.exercise_id, self.title = exercise_id, title
        self.passed, self.skipped, self.failure = [], [], None

    def ok(self, line): self.passed.append(line)
    def skip(self, line): self.skipped.append(line)

    @property
    def success(self): return self.failure is None

    def text(self):
        verdict = 'passed' if self.success else 'not yet'
        lines = [f"Exercise {self.exercise_id} ({self.title}): {verdict}"]
        lines += [f"  ok    {l}" for l in self.passed]
        if self.failure: lines.append(f"  FIX   {self.failure}")
        lines += [f"  not checked on this machine: {l}" for l in self.skipped]
        return '\n'.join(lines)

    def __repr__(self): return self.text()


# --------------------------------------------------------------------------------------------------
# Calling the learner's code
# --------------------------------------------------------------------------------------------------

def learner_line(exc):
    "'line N of your cell: <code>' for the innermost frame of the learner's code in a traceback, or ''."
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(str(ROOT / 'course')) and 'site-packages' not in f.filename
              and not f.filename.startswith('<frozen')]
    if not frames: return ''
    f = frames[-1]
    return f" (line {f.lineno}: {f.line.strip()})" if f.line else f" (line {f.lineno})"


@contextlib.contextmanager
def running(what):
    "Run the learner's code; turn what it raises into one sentence."
    try:
        yield
    except NotYet: raise
    except KernelFault as e: raise NotYet(f"{what}: {e}") from None
    except NotImplementedError as e: raise NotYet(f"{what} is not written yet ({e or 'NotImplementedError'})") from None
    except Exception as e:
        raise NotYet(f"{what} raised {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
                     f"{learner_line(e)}") from None


def need(ns, *names):
    "The learner's definitions of `names` (from the notebook), or a sentence saying which one is missing."
    missing = [n for n in names if n not in ns]
    if missing: raise NotYet(f"define {', '.join(missing)}: run the exercise's cell first")
    return [ns[n] for n in names]


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
    got_text = 'never written' if math.isnan(g) else f"{g:.6g}"
    raise NotYet(f"{what}: element {list(first)} is {got_text}, expected {e:.6g} "
                 f"({int(bad.sum())} of {bad.numel()} elements wrong)")


def at_most(trace, where, kind, limit, why):
    """Fail if any one thread (or block) made more than `limit` accesses of this kind to `where`: a memory
    space ('global', 'shared') or a global buffer by name ('m')."""
    from .checked_simulator import who
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


def compiled(report, src, what):
    "The CudaModule of `src`, None where nvcc is missing (said in the report); a compile error is a failure."
    from .compile_errors import CudaCompileError
    from .cuda_library import compile_cuda
    from .cuda_toolkit import nvcc_available
    if not nvcc_available():
        report.skip("compiling the CUDA C and everything after it (nvcc is not installed)")
        return None
    try: mod = compile_cuda(src)
    except CudaCompileError as e: raise NotYet(f"nvcc cannot compile {what}:\n{textwrap.indent(str(e), '        ')}") from None
    report.ok(f"{what} compiles")
    return mod


# What to look for in a kernel's machine code (SASS; PTX where cuobjdump is missing), by purpose.
MACHINE_CODE = {
    'SASS': {'multiply-adds': r'\bFFMA\b', 'barriers': r'\bBAR\.SYNC', 'shared stores': r'\bSTS(?:\.\d+)?\b',
             'shared loads': r'\bLDS(?:\.\d+)?\b', 'global loads': r'\bLDG\b', 'local memory': r'\b(?:LDL|STL)\b',
             '128-bit shared loads': r'\bLDS\.128\b'},
    'PTX': {'multiply-adds': r'\bfma\.rn\.f32\b', 'barriers': r'\bbar\.sync\b|\bbarrier\.sync\b', 'shared stores': r'\bst\.shared\b',
            'shared loads': r'\bld\.shared\b', 'global loads': r'\bld\.global\b', 'local memory': r'\b(?:ld|st)\.local\b',
            '128-bit shared loads': r'\bld\.shared\.v4'},
}


def machine_code(src, kernel):
    "(kind, listing) of the kernel whose mangled name contains `kernel`, made by nvcc (no GPU needed)."
    from .disassembly import cuda_disassembly, kernel_listing
    kind, text = cuda_disassembly(src)
    return kind, kernel_listing((kind, text), kernel)


def count_in(kind, listing, what):
    return len(re.findall(MACHINE_CODE[kind][what], listing))


def cuda_time(fn, *args):
    from .timing import cuda_time_ms
    return cuda_time_ms(fn, *args, warmup=3, reps=30)


def faster_than(report, fn, reference, args, target, what, reference_name):
    "Time fn and reference on args; fail unless fn takes at most `target` times the reference's time."
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
import sys, torch
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
    from .cuda_toolkit import cuda_tool
    sanitizer = cuda_tool('compute-sanitizer')
    if not sanitizer:
        report.skip("out-of-bounds accesses and races on the GPU (compute-sanitizer is not installed)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        src_path, script = Path(tmp) / 'kernel.cu', Path(tmp) / 'driver.py'
        src_path.write_text(src)
        script.write_text(SANITIZER_DRIVER.format(root=str(ROOT), src_path=str(src_path), calls=textwrap.dedent(calls)))
        for tool in tools:
            res = subprocess.run([sanitizer, f'--tool={tool}', '--report-api-errors=no', '--error-exitcode=99',
                                  sys.executable, str(script)], capture_output=True, text=True, timeout=600)
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
    first = next((i for i, l in enumerate(lines) if l.startswith('Invalid')), None)
    if first is None: return f"compute-sanitizer's {tool} failed (exit code {code}): " + ' / '.join(lines[:4])
    return "out of bounds on the GPU: " + '; '.join(lines[first:first + 4])


# --------------------------------------------------------------------------------------------------
# Sources of the learner's Python and CUDA C
# --------------------------------------------------------------------------------------------------

def source_of(fn):
    "The Python source of a function or a Numba kernel (on the GPU or in the simulator); '' if unknown."
    import inspect
    fn = getattr(fn, 'py_func', None) or getattr(fn, 'fn', None) or fn
    try: return inspect.getsource(fn)
    except (OSError, TypeError): return ''


def strip_comments(src, language='python'):
    if language == 'python': return re.sub(r'#.*', '', src)
    return re.sub(r'//.*|/\*.*?\*/', '', src, flags=re.S)

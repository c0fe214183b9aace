"""Helpers shared by every notebook of the course.

The first block is a drop-in for the lecture's own `utils.py`: the same names, argument order and
defaults (`cdiv`, `dim3`, `show_img`, `cuda_begin`, `get_sig`, `load_cuda`), so the lecture's
notebooks run unchanged on it. The rest is what several of our notebooks need:

- `%%needs_gpu` (and `%%needs_nvcc`): cell magics for the cells that truly need a CUDA GPU (or the
  CUDA compiler). Where it is there the cell runs as if the magic were not; elsewhere it prints a single
  line saying what is missing and that the cell was skipped.
- `compile_cuda`: the fast way to compile a kernel (a plain `.cu` with `extern "C"` launchers, built
  by nvcc for this GPU only and loaded with ctypes), a few seconds instead of a minute.
- `check_matmul_inputs`: the input checks every matmul wrapper of the course shares.
- `import_notebook`: runs the cells of a notebook marked `#| export`, so tests and benchmarks use the
  very kernels the notebooks teach instead of copies of them.
- `cuda_time_ms` and `kernel_output`: timing with CUDA events, and showing a kernel's printf.
"""
import ctypes, functools, hashlib, itertools, json, math, os, re, shutil, subprocess, sys, tempfile, types
from collections import namedtuple
from pathlib import Path

# --------------------------------------------------------------------------------------------------
# The lecture's helpers
# --------------------------------------------------------------------------------------------------

dim3 = namedtuple('dim3', ['x', 'y', 'z'], defaults=(1, 1))


def cdiv(a, b):
    "Integer ceiling of `a/b`: how many blocks of size `b` cover `a` items."
    return (a + b - 1) // b


def show_img(x, figsize=(4, 3), **kwargs):
    "Show an image tensor (C,H,W or H,W) with matplotlib, without axes."
    import matplotlib.pyplot as plt
    plt.figure(figsize=figsize)
    plt.axis('off')
    if len(x.shape) == 3: x = x.permute(1, 2, 0)  # CHW -> HWC
    plt.imshow(x.cpu(), **kwargs)


# The prelude every lecture-style CUDA source starts with. `CUDA_ERR` raises a Python exception
# (through TORCH_CHECK) instead of calling exit(): a failed CUDA call must not kill the Jupyter kernel.
# Keep TORCH_CHECK messages in such sources to one C string: see gpuAssert.
cuda_begin = r'''
#include <torch/extension.h>
#include <stdio.h>
#include <c10/cuda/CUDAException.h>

#define CHECK_CUDA(x) TORCH_CHECK(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK(x.is_contiguous(), #x " must be contiguous")
#define CHECK_INPUT(x) CHECK_CUDA(x); CHECK_CONTIGUOUS(x)
#define CUDA_ERR(ans) { gpuAssert((ans), __FILE__, __LINE__); }
inline void gpuAssert(cudaError_t code, const char *file, int line) {
    if (code == cudaSuccess) return;
    // One ready-made C string for TORCH_CHECK: a message of several parts, thrown from a .cu file,
    // crashed the process with torch 2.11 and nvcc 13.0 (measured on an H100).
    char buf[512];
    snprintf(buf, sizeof(buf), "CUDA error: %s at %s:%d", cudaGetErrorString(code), file, line);
    const char *msg = buf;
    TORCH_CHECK(false, msg);
}
__host__ __device__ inline unsigned int cdiv(unsigned int a, unsigned int b) { return (a+b-1)/b; }
'''

_C_IDENT = r'[A-Za-z_]\w*'


def get_sig(fname, src):
    """The declaration of C++ function `fname` defined in `src`, ending in `;`, or None.

    Finds the definition (return type, name, parameters, then `{` or the end of the line), also
    when its parameters run over several lines or it is a template, and ignores calls and launches
    such as `return fname(x);` or `fname<<<b, t>>>(...)`."""
    pat = (rf'^[ \t]*((?:template\s*<[^<>]*>\s*)?'           # optional template header
           rf'[^\n;{{}}()#/]*?[\w*&>\s]'                      # return type (and qualifiers)
           rf'(?<![\w:.]){re.escape(fname)}\s*\([^;{{}}]*?\))'  # the name, then its parameters
           rf'\s*(?:\{{|$)')
    res = re.findall(pat, src, re.MULTILINE)
    res = [s for s in res if not re.match(r'\s*(return|else|case|do)\b', s)]
    return ' '.join(res[0].split()) + ';' if res else None


class CudaUnavailableError(RuntimeError):
    "Raised at once when something needs CUDA (a GPU, nvcc or a CUDA build of torch) that is missing."


def _nvcc_path():
    from torch.utils.cpp_extension import CUDA_HOME
    cand = [os.path.join(CUDA_HOME, 'bin', 'nvcc')] if CUDA_HOME else []
    cand += [shutil.which('nvcc') or '', '/usr/local/cuda/bin/nvcc']
    return next((c for c in cand if c and os.path.exists(c)), None)


def _require_cuda(what, need_gpu=True):
    "Fail in one sentence if `what` cannot run here."
    import torch
    if need_gpu and torch.version.cuda is None:
        raise CudaUnavailableError(
            f"{what} needs a CUDA build of PyTorch, and this one ({torch.__version__}) is CPU-only: "
            "run the course on a machine with an NVIDIA GPU (see README, 'GPU machine' or 'Colab').")
    if need_gpu and not torch.cuda.is_available():
        raise CudaUnavailableError(
            f"{what} needs an NVIDIA GPU, and torch.cuda.is_available() is False on this machine: "
            "run this on a GPU machine or Colab with a GPU runtime (see README).")
    if _nvcc_path() is None:
        raise CudaUnavailableError(
            f"{what} needs the CUDA compiler nvcc, which is not on this machine: install the CUDA "
            "toolkit (or set CUDA_HOME to it) and restart the kernel.")


def load_cuda(cuda_src, cpp_src, funcs, opt=True, verbose=False, name=None):
    """Compile `cuda_src` (CUDA C++ with torch wrappers) into a Python module, as the lecture does,
    with `torch.utils.cpp_extension.load_inline`. `cpp_src` declares the wrappers (see `get_sig`)
    and `funcs` lists the ones to expose. Slow (about a minute): see `compile_cuda` for the fast path.
    Compile errors come back short, pointing at the line of `cuda_src` they are about."""
    _require_cuda('load_cuda')
    from torch.utils.cpp_extension import load_inline
    if name is None: name = funcs[0]
    flags = "-O3 -Xptxas -O3 -Xcompiler -O3" if opt else "-O0 -Xptxas -O0 -Xcompiler -O0"
    try:
        return load_inline(cuda_sources=[cuda_src], cpp_sources=[cpp_src], functions=funcs,
                           extra_cuda_cflags=[flags], verbose=verbose, name=name)
    except RuntimeError as e:
        errors = _compile_errors(str(e), {'cuda.cu': cuda_src, 'main.cpp': cpp_src}, build_root=_torch_build_dir(name))
        if not errors: raise
        raise CudaCompileError(errors) from None


def _torch_build_dir(name):
    from torch.utils.cpp_extension import _get_build_directory
    return _get_build_directory(name, verbose=False)


class CudaCompileError(RuntimeError):
    "A kernel failed to compile; the message holds only the compiler's errors, each with its line."


def _compile_errors(log, sources, build_root=None):
    """Pick the compiler's error lines out of `log` and show each with the line it points at.

    `sources` maps a file name the compiler saw to the text the learner wrote; the line shown comes
    from the file the compiler compiled (in `build_root`), matched back to the learner's text."""
    out = []
    for fn, line, msg in re.findall(r'([\w./-]+?)\((\d+)\): (error: .*)', log) + \
            [(f, l, m) for f, l, _, m in re.findall(r'([\w./-]+?):(\d+):(\d+): (error: .*)', log)]:
        base, line = os.path.basename(fn), int(line)
        text = None
        for p in [Path(fn), Path(build_root or '.') / base]:
            if p.exists():
                lines = p.read_text().splitlines()
                if 0 < line <= len(lines): text = lines[line - 1]
                break
        mine = sources.get(base)
        where = base
        if text is not None and mine is not None:
            own = [i + 1 for i, l in enumerate(mine.splitlines()) if l == text]
            if own: where, line = 'your source', own[0]
        entry = f"{where}, line {line}: {msg.strip()}"
        if text is not None: entry += f"\n    {line:4d} | {text.strip()}"
        if entry not in out: out.append(entry)
    return '\n'.join(out[:10])


# --------------------------------------------------------------------------------------------------
# Running a cell only where there is a GPU
# --------------------------------------------------------------------------------------------------

SKIP_MARK = '[skipped here]'


def gpu_available():
    "True when PyTorch can use a CUDA GPU."
    import torch
    return torch.cuda.is_available()


def nvcc_available():
    "True when the CUDA compiler nvcc is installed (it compiles kernels even where there is no GPU)."
    return _nvcc_path() is not None


# Each cell magic runs its cell where the requirement holds, and otherwise prints one line that says
# what is missing and that the cell was skipped. The test harness counts those lines as skipped cells.
CELL_REQUIREMENTS = {'needs_gpu': (gpu_available, 'no CUDA GPU'),
                     'needs_nvcc': (nvcc_available, 'no nvcc, the CUDA compiler')}


def _requirement_magic(name):
    available, missing = CELL_REQUIREMENTS[name]
    def magic(line, cell):
        from IPython import get_ipython
        if available():
            result = get_ipython().run_cell(cell, store_history=False)
            result.raise_error()  # an error in the cell is an error of the cell, for Jupyter and for nbclient
        else: print(f"{SKIP_MARK} {missing} on this machine, so this cell did not run: {line.strip() or name}")
    magic.__name__ = name
    magic.__doc__ = f"Cell magic `%%{name} [what the cell does]`: run the cell only where there is {missing[3:]}."
    return magic


def _register_magics():
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None: return
    for name in CELL_REQUIREMENTS: ip.register_magic_function(_requirement_magic(name), magic_kind='cell')


_register_magics()

# --------------------------------------------------------------------------------------------------
# Input checks shared by every matmul wrapper
# --------------------------------------------------------------------------------------------------


def check_matmul_inputs(m, n, device='cuda'):
    """Check that `m @ n` is a problem our kernels can do, and return (h, k, w).

    Both must be 2-D, float32, contiguous, on `device` ('cuda' or 'cpu'), non-empty, with
    m's columns matching n's rows, and small enough for 32-bit indices. Raises ValueError or
    TypeError with a sentence that says which rule failed."""
    import torch
    for name, t in (('m', m), ('n', n)):
        if not isinstance(t, torch.Tensor): raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2: raise ValueError(f"{name} must be a 2-D matrix, got {t.dim()} dimensions {tuple(t.shape)}")
        if t.dtype != torch.float32: raise TypeError(f"{name} must be float32, got {t.dtype}")
        if t.device.type != device: raise ValueError(f"{name} must be on the {device.upper()} device, got {t.device}")
        if not t.is_contiguous(): raise ValueError(f"{name} must be contiguous (call .contiguous() first)")
        if t.numel() == 0: raise ValueError(f"{name} is empty {tuple(t.shape)}: nothing to multiply")
        if t.numel() >= 2**31: raise ValueError(f"{name} has {t.numel()} elements; the kernels index with 32-bit ints")
    if m.device != n.device: raise ValueError(f"m and n must be on the same device, got {m.device} and {n.device}")
    (h, k), (k2, w) = m.shape, n.shape
    if k != k2: raise ValueError(f"size mismatch: m is {h}x{k} but n is {k2}x{w} ({k} != {k2})")
    if h * w >= 2**31: raise ValueError(f"the output {h}x{w} is too large for 32-bit indices")
    return h, k, w


# --------------------------------------------------------------------------------------------------
# Fast compile path: nvcc + ctypes
# --------------------------------------------------------------------------------------------------

# The prelude for `compile_cuda` sources: only the CUDA runtime, no torch headers, so nvcc has a
# few hundred lines to compile instead of a hundred thousand.
cuda_prelude = r'''#include <cuda_runtime.h>
#include <cstdio>
__host__ __device__ inline unsigned int cdiv(unsigned int a, unsigned int b) { return (a+b-1)/b; }
'''

_CTYPES = {'int': ctypes.c_int, 'unsigned int': ctypes.c_uint, 'long': ctypes.c_long, 'long long': ctypes.c_longlong,
           'size_t': ctypes.c_size_t, 'float': ctypes.c_float, 'double': ctypes.c_double, 'bool': ctypes.c_bool,
           'cudaStream_t': ctypes.c_void_p, 'cudaError_t': ctypes.c_int, 'void': None}


def _c_type(decl):
    "The ctypes type for a C parameter or return declaration such as 'const float* m' or 'int'."
    decl = re.sub(r'\b(const|volatile|__restrict__|restrict|extern|"C")\b', ' ', decl)
    if '*' in decl: return ctypes.c_void_p, True
    words = decl.split()
    base = ' '.join(words[:-1]) if len(words) > 1 and words[-1] not in _CTYPES else ' '.join(words)
    if base not in _CTYPES: raise TypeError(f"compile_cuda cannot pass C type '{base}' from Python")
    return _CTYPES[base], False


def _extern_c_functions(src):
    "Name, return declaration and parameter declarations of each `extern \"C\"` function in src."
    funcs = []
    for ret, name in re.findall(rf'extern\s+"C"\s+(?:__host__\s+)?([\w\s*]+?)\s*\b({_C_IDENT})\s*\(', src):
        sig = get_sig(name, src)
        params = sig[sig.index('(') + 1: sig.rindex(')')].strip()
        params = [] if params in ('', 'void') else [p.strip() for p in params.split(',')]
        funcs.append((name, ret.strip(), params))
    return funcs


class CudaError(RuntimeError):
    "A CUDA call or kernel launch reported an error."


class CudaModule:
    """Functions of a compiled CUDA library, callable from Python.

    Each `extern "C"` function becomes a method. Torch tensors passed for pointer parameters are
    checked (CUDA, contiguous) and passed as device pointers; a final `cudaStream_t` parameter left
    out is filled in with torch's current stream; a `cudaError_t` result that is not success raises
    CudaError with CUDA's own message."""

    def __init__(self, lib_path, src):
        self.path = lib_path
        self._lib = ctypes.CDLL(str(lib_path))
        self._lib.course_cuda_error_string.restype = ctypes.c_char_p
        self.functions = {}
        for name, ret, params in _extern_c_functions(src):
            if name == 'course_cuda_error_string': continue
            f = getattr(self._lib, name)
            types_ = [_c_type(p) for p in params]
            f.argtypes = [t for t, _ in types_]
            f.restype = _c_type(ret)[0]
            self.functions[name] = (f, ret.split()[-1], params, [p for _, p in types_])
            setattr(self, name, self._caller(name))

    def _caller(self, name):
        import torch
        f, ret, params, is_ptr = self.functions[name]
        takes_stream = bool(params) and params[-1].split()[0] == 'cudaStream_t'

        def call(*args):
            args = list(args)
            if takes_stream and len(args) == len(params) - 1:
                args.append(torch.cuda.current_stream().cuda_stream)
            if len(args) != len(params):
                raise TypeError(f"{name} takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
            for i, (a, p) in enumerate(zip(args, is_ptr)):
                if isinstance(a, torch.Tensor):
                    if not p: raise TypeError(f"{name}: argument {i} ({params[i]}) is not a pointer; got a tensor")
                    if not a.is_cuda: raise ValueError(f"{name}: argument {i} ({params[i]}) must be a CUDA tensor")
                    if not a.is_contiguous(): raise ValueError(f"{name}: argument {i} ({params[i]}) must be contiguous")
                    args[i] = a.data_ptr()
            res = f(*args)
            if ret == 'cudaError_t' and res != 0:
                raise CudaError(f"{name}: {self._lib.course_cuda_error_string(res).decode()} (CUDA error {res})")
            return res
        call.__name__ = name
        call.__doc__ = f"{name}({', '.join(params)})"
        return call

    def __repr__(self): return f"<CudaModule {Path(self.path).name}: {', '.join(self.functions)}>"


_ERROR_STRING_SRC = r'''
extern "C" const char* course_cuda_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }
'''


def cuda_arch():
    "The `sm_XY` of the current GPU, or `sm_90` (an H100) where there is no GPU to ask."
    import torch
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return f'sm_{major}{minor}'
    return 'sm_90'


def cache_dir():
    "Where compiled kernels are kept, keyed by a hash of their source and flags."
    d = Path(os.environ.get('COURSE_CUDA_CACHE', Path.home() / '.cache' / 'cuda-course'))
    d.mkdir(parents=True, exist_ok=True)
    return d


def nvcc(args, src, suffix, what='compile_cuda'):
    """Run nvcc on `src` and return the path of its output (cached by content: same source, flags and
    compiler give the same file, so a restarted notebook reuses it). Errors come back short."""
    _require_cuda(what, need_gpu=False)
    exe = _nvcc_path()
    key = hashlib.sha256('\0'.join([src, *args, _nvcc_version(exe)]).encode()).hexdigest()[:16]
    out = cache_dir() / f'k_{key}{suffix}'
    if out.exists(): return out
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / 'kernel.cu'
        cu.write_text(src)
        tmp_out = Path(tmp) / ('out' + suffix)
        res = subprocess.run([exe, *args, str(cu), '-o', str(tmp_out)], capture_output=True, text=True)
        if res.returncode != 0:
            msg = _compile_errors(res.stderr, {'kernel.cu': src}, build_root=tmp)
            raise CudaCompileError(msg or res.stderr.strip()[-3000:])
        shutil.move(str(tmp_out), out)
    return out


@functools.lru_cache(maxsize=None)
def _nvcc_version(exe):
    "nvcc's version text, asked once per process: it is part of every cache key."
    return subprocess.run([exe, '--version'], capture_output=True, text=True).stdout


def compile_cuda(cuda_src, opt=True, arch=None, extra_flags=()):
    """Compile `cuda_src` (CUDA C++ with `extern "C"` launchers, see `cuda_prelude`) with nvcc for
    one GPU architecture only, and return a CudaModule whose methods call the launchers.

    The fast path of the course: no torch headers, so a first compile takes seconds, and a content
    hash names the library, so re-running the cell or restarting the notebook reuses it.
    Without a GPU (but with nvcc) it still compiles: the source is checked, nothing can run."""
    arch = arch or cuda_arch()
    flags = ['-O3', '-Xptxas', '-O3'] if opt else ['-O0', '-Xptxas', '-O0', '-G']
    args = ['-shared', '-Xcompiler', '-fPIC', f'-arch={arch}', '-lineinfo', *flags, *extra_flags]
    lib = nvcc(args, cuda_src + _ERROR_STRING_SRC, '.so')
    return CudaModule(lib, cuda_src)


def cuda_disassembly(cuda_src, arch=None, extra_flags=()):
    """The machine code (SASS) nvcc makes of `cuda_src`, from cuobjdump; where cuobjdump is missing,
    the PTX (the portable assembly the machine code is made from) instead. Returns (kind, text)."""
    arch = arch or cuda_arch()
    cuobjdump = shutil.which('cuobjdump') or (os.path.join(os.path.dirname(_nvcc_path() or ''), 'cuobjdump'))
    if cuobjdump and os.path.exists(cuobjdump):
        cubin = nvcc(['-cubin', f'-arch={arch}', '-O3', *extra_flags], cuda_src, '.cubin', what='cuda_disassembly')
        sass = subprocess.run([cuobjdump, '-sass', str(cubin)], capture_output=True, text=True, check=True).stdout
        return 'SASS', sass
    ptx = nvcc(['-ptx', f'-arch={arch}', '-O3', *extra_flags], cuda_src, '.ptx', what='cuda_disassembly')
    return 'PTX', Path(ptx).read_text()


def kernel_listing(disassembly, kernel_substring):
    "The part of a SASS or PTX listing that belongs to the kernel whose (mangled) name contains the given text."
    kind, text = disassembly
    if kind == 'SASS':
        parts = re.split(r'\n(?=\s*Function : )', text)
    else:
        parts = re.split(r'\n(?=\.visible \.entry|\.entry)', text)
    hits = [p for p in parts if kernel_substring in p.split('\n', 1)[0]]
    return hits[0] if hits else ''


# --------------------------------------------------------------------------------------------------
# Using the notebooks' own code from tests and benchmarks
# --------------------------------------------------------------------------------------------------

EXPORT_MARK = '#| export'
NOTEBOOK_DIR = Path(__file__).resolve().parent / 'notebooks'


def exported_cells(nb_path):
    "The source of each code cell of a notebook whose first line is `#| export`."
    nb = json.loads(Path(nb_path).read_text())
    cells = [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']
    return [c for c in cells if c.lstrip().startswith(EXPORT_MARK)]


def import_notebook(name):
    """Run the `#| export` cells of notebook `name` (a path, or a file name or prefix such as '05'
    inside notebooks/) in a fresh module and return it, so other code uses the notebook's kernels
    themselves rather than copies. Export cells only define things: no compiling, no timing."""
    path = Path(name)
    if not path.exists():
        hits = sorted(NOTEBOOK_DIR.glob(f'{name}*.ipynb'))
        if len(hits) != 1: raise FileNotFoundError(f"no single notebook matches {name!r} in {NOTEBOOK_DIR}: {hits}")
        path = hits[0]
    mod = types.ModuleType(f'notebook_{path.stem}')
    mod.__file__ = str(path)
    for src in exported_cells(path):
        exec(compile(src, f'{path.name}[export]', 'exec'), mod.__dict__)
    return mod


# --------------------------------------------------------------------------------------------------
# Timing and kernel output
# --------------------------------------------------------------------------------------------------


def cuda_time_ms(fn, *args, warmup=3, reps=20, max_seconds=2.0, arg_sets=None, back_to_back=1):
    """Median time per call of `fn(*args)` in milliseconds, on the GPU's clock: CUDA events recorded
    before and after, after `warmup` calls; stops early once `max_seconds` of timed calls have run.

    With `back_to_back=1` each timed call starts on an idle GPU, so the time includes what the call does
    on the CPU before its kernel starts (checks, argument conversion, the launch): what one call costs.
    With `back_to_back=N` the events enclose N calls queued one after another and the result is the
    total over N: while the GPU runs one call's kernel the CPU prepares the next, so launch costs shorter
    than the kernel hide, and what remains is the GPU's time per call.

    With `arg_sets` (a list of argument tuples) the calls rotate through them, so that inputs small
    enough to stay in the GPU's L2 cache between calls do not make the kernel look faster than it is."""
    import torch
    arg_sets = arg_sets or [args]
    calls = itertools.count()
    def call(): fn(*arg_sets[next(calls) % len(arg_sets)])
    for _ in range(warmup): call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(back_to_back): call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / back_to_back)
        if sum(times) * back_to_back > max_seconds * 1000 and len(times) >= 3: break
    times.sort()
    return times[len(times) // 2]


class kernel_output:
    """Context manager that shows, in the notebook cell, what kernels print with printf.

    A kernel's printf lands in a device buffer that the CUDA runtime writes to the process's C-level
    stdout when the host synchronizes; Jupyter only shows Python's sys.stdout. On exit this
    synchronizes the GPU, captures that C-level output with wurlitzer and prints it from Python."""

    def __enter__(self):
        from wurlitzer import pipes
        self._pipes = pipes()
        self._out, self._err = self._pipes.__enter__()
        return self

    def __exit__(self, *exc):
        import torch
        try:
            if torch.cuda.is_available(): torch.cuda.synchronize()
        finally:
            self._pipes.__exit__(*exc)
        text = self._out.getvalue() + self._err.getvalue()
        if text: print(text, end='')
        return False

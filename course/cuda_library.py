"""The fast compile path: a plain `.cu` built by nvcc into a shared library, its launchers called from Python.

A source for `compile_cuda` holds kernels and small `extern "C"` launchers that take raw pointers and
sizes, launch on a stream and return CUDA's error code. It includes only the CUDA runtime
(`cuda_prelude`), not PyTorch's headers, so nvcc has a few hundred lines to compile instead of a hundred
thousand. The tensor checks live in Python wrappers, like the Numba wrappers of notebook 08.
"""
import ctypes, hashlib, re, shutil, subprocess, tempfile
from pathlib import Path

from .compile_errors import CudaCompileError, compile_errors
from .cuda_toolkit import cache_dir, cuda_arch, nvcc_path, nvcc_version, require_cuda

# The prelude for `compile_cuda` sources.
cuda_prelude = r'''#include <cuda_runtime.h>
#include <cstdio>
__host__ __device__ inline unsigned int cdiv(unsigned int a, unsigned int b) { return (a+b-1)/b; }
'''

_CTYPES = {'int': ctypes.c_int, 'unsigned int': ctypes.c_uint, 'long': ctypes.c_long, 'long long': ctypes.c_longlong,
           'size_t': ctypes.c_size_t, 'float': ctypes.c_float, 'double': ctypes.c_double, 'bool': ctypes.c_bool,
           'cudaStream_t': ctypes.c_void_p, 'cudaError_t': ctypes.c_int, 'void': None}

# `extern "C" <return type> <name>(<parameters>) {`: a launcher's definition (parameters hold no parentheses).
_EXTERN_C = re.compile(r'extern\s+"C"\s+(?:__host__\s+)?([\w\s*]+?)\s*\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*\{')


def c_type(decl):
    "The ctypes type of a C parameter or return declaration such as 'const float* m' or 'int', and whether it is a pointer."
    decl = re.sub(r'\b(const|volatile|__restrict__|restrict)\b', ' ', decl)
    if '*' in decl: return ctypes.c_void_p, True
    words = decl.split()
    base = ' '.join(words[:-1]) if len(words) > 1 and words[-1] not in _CTYPES else ' '.join(words)
    if base not in _CTYPES: raise TypeError(f"compile_cuda cannot pass C type '{base}' from Python")
    return _CTYPES[base], False


# The tensor dtype a pointer parameter's element type stands for (by the torch dtype's name).
_POINTEE_DTYPES = {'float': 'float32', 'double': 'float64', 'int': 'int32', 'long long': 'int64', 'int64_t': 'int64',
                   'int32_t': 'int32', 'unsigned char': 'uint8', 'uint8_t': 'uint8', '__half': 'float16', 'half': 'float16',
                   '__nv_bfloat16': 'bfloat16'}


def pointee_dtype(decl):
    "The torch dtype name a pointer parameter such as 'const float* m' points to, or None (void*, or a type not listed)."
    base = re.sub(r'\b(const|volatile|__restrict__|restrict)\b', ' ', decl.split('*')[0])
    return _POINTEE_DTYPES.get(' '.join(base.split()))


def extern_c_functions(src):
    "Name, return declaration and parameter declarations of each `extern \"C\"` function defined in src."
    funcs = []
    for ret, name, params in _EXTERN_C.findall(src):
        params = ' '.join(params.split())
        params = [] if params in ('', 'void') else [p.strip() for p in params.split(',')]
        funcs.append((name, ret.strip(), params))
    return funcs


def current_gpu():
    """The current GPU's index, -1 where there is none: asked of torch's C++ side, as current_stream_handle does
    (torch.cuda.current_device() costs a few microseconds more a call)."""
    import torch
    try: return torch._C._cuda_getDevice()
    except (AttributeError, RuntimeError): return -1


def current_stream_handle(device=None):
    """torch's current stream on `device` (an index; the current device unless said), as the integer a cudaStream_t
    parameter takes. torch.cuda.current_stream() builds a Python Stream object to answer this, which costs a few
    microseconds a call: as much as a small kernel's launch. The private call that Triton's launcher also uses takes
    a fraction of that; where this torch has not got it, the public one."""
    import torch
    raw = getattr(torch._C, '_cuda_getCurrentRawStream', None)
    if raw is None: return torch.cuda.current_stream(device).cuda_stream
    return raw(torch._C._cuda_getDevice() if device is None else device)


class CudaError(RuntimeError):
    "A CUDA call or kernel launch reported an error."


class CudaModule:
    """Functions of a compiled CUDA library, callable from Python.

    Each `extern "C"` function becomes a method. Torch tensors passed for pointer parameters are
    checked (CUDA, contiguous, and the dtype the pointer's type stands for: float* takes float32) and
    passed as device pointers; a final `cudaStream_t` parameter left
    out is filled in with torch's current stream; a `cudaError_t` result that is not success raises
    CudaError with CUDA's own message."""

    def __init__(self, lib_path, src):
        self.path = lib_path
        self._lib = ctypes.CDLL(str(lib_path))
        self._lib.course_cuda_error_string.restype = ctypes.c_char_p
        self.functions = {}
        for name, ret, params in extern_c_functions(src):
            f = getattr(self._lib, name)
            types_ = [c_type(p) for p in params]
            f.argtypes = [t for t, _ in types_]
            f.restype = c_type(ret)[0]
            self.functions[name] = (f, ret.split()[-1], params, [pointee_dtype(d) if p else None for d, (_, p) in zip(params, types_)],
                                    [p for _, p in types_])
            setattr(self, name, self._caller(name))

    def _caller(self, name):
        import torch
        f, ret, params, dtypes, is_ptr = self.functions[name]
        takes_stream = bool(params) and params[-1].split()[0] == 'cudaStream_t'

        def call(*args):
            args = list(args)
            if takes_stream and len(args) == len(params) - 1:
                args.append(current_stream_handle())
            if len(args) != len(params):
                raise TypeError(f"{name} takes {len(params)} arguments ({', '.join(params)}), got {len(args)}")
            for i, (a, p) in enumerate(zip(args, is_ptr)):
                if isinstance(a, torch.Tensor):
                    if not p: raise TypeError(f"{name}: argument {i} ({params[i]}) is not a pointer; got a tensor")
                    if not a.is_cuda: raise ValueError(f"{name}: argument {i} ({params[i]}) must be a CUDA tensor")
                    if not a.is_contiguous(): raise ValueError(f"{name}: argument {i} ({params[i]}) must be contiguous")
                    if dtypes[i] and a.dtype != getattr(torch, dtypes[i]):
                        raise TypeError(f"{name}: argument {i} ({params[i]}) must be a {dtypes[i]} tensor, got {a.dtype}")
                    args[i] = a.data_ptr()
            res = f(*args)
            if ret == 'cudaError_t': self.raise_if_error(name, res)
            return res
        call.__name__ = name
        call.__doc__ = f"{name}({', '.join(params)})"
        return call

    def raise_if_error(self, name, code):
        "Raise CudaError, with CUDA's own message, if `code` (a cudaError_t that function `name` returned) is not success."
        if code != 0: raise CudaError(f"{name}: {self._lib.course_cuda_error_string(code).decode()} (CUDA error {code})")

    def unchecked(self, name):
        """The ctypes function `name` itself, without the method's checks: pointers passed as ints (a tensor's
        data_ptr()), the stream given, and a cudaError_t returned, not raised (`raise_if_error` raises it). For a
        caller that has checked its tensors already, and is called often enough for the checks' microseconds to count."""
        return self.functions[name][0]

    def __repr__(self): return f"<CudaModule {Path(self.path).name}: {', '.join(self.functions)}>"


# Compiled into every library, so that CudaModule can turn an error code into CUDA's message. CudaModule
# reads the launchers from the learner's source only, so this helper is not one of its methods.
_ERROR_STRING_SRC = r'''
extern "C" const char* course_cuda_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }
'''


def run_nvcc(args, src, suffix, what='compile_cuda'):
    """Run nvcc on `src` and return the path of its output (cached by content: same source, flags and
    compiler give the same file, so a restarted notebook reuses it). Errors come back short."""
    require_cuda(what, need_gpu=False)
    exe = nvcc_path()
    key = hashlib.sha256('\0'.join([src, *args, nvcc_version(exe)]).encode()).hexdigest()[:16]
    out = cache_dir() / f'k_{key}{suffix}'
    if out.exists(): return out
    with tempfile.TemporaryDirectory() as tmp:
        cu = Path(tmp) / 'kernel.cu'
        cu.write_text(src)
        tmp_out = Path(tmp) / ('out' + suffix)
        res = subprocess.run([exe, *args, str(cu), '-o', str(tmp_out)], capture_output=True, text=True)
        if res.returncode != 0:
            msg = compile_errors(res.stderr, {'kernel.cu': src}, build_dir=tmp)
            raise CudaCompileError(msg or res.stderr.strip()[-3000:])
        shutil.move(str(tmp_out), out)
    return out


def compile_cuda(cuda_src, opt=True, arch=None, extra_flags=()):
    """Compile `cuda_src` (CUDA C++ with `extern "C"` launchers, see `cuda_prelude`) with nvcc for
    one GPU architecture only, and return a CudaModule whose methods call the launchers.

    The fast path of the course: no torch headers, so a first compile takes about a second, and a content
    hash names the library, so re-running the cell or restarting the notebook reuses it.
    Without a GPU (but with nvcc) it still compiles: the source is checked, nothing can run.
    `arch` is `sm_XY` (the GPU's own unless said); an arch-specific target such as `sm_90a` (Hopper's wgmma and
    setmaxnreg) is built with `-gencode=arch=compute_90a,code=sm_90a`, since `-arch=sm_90a` also runs a plain
    sm_90 pass that rejects those instructions."""
    arch = arch or cuda_arch()
    target = f'-gencode=arch=compute_{arch[3:]},code={arch}' if arch.endswith('a') else f'-arch={arch}'
    flags = ['-O3', '-Xptxas', '-O3'] if opt else ['-O0', '-Xptxas', '-O0', '-G']
    args = ['-shared', '-Xcompiler', '-fPIC', target, '-lineinfo', *flags, *extra_flags]
    lib = run_nvcc(args, cuda_src + _ERROR_STRING_SRC, '.so')
    return CudaModule(lib, cuda_src)

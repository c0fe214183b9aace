"""Building the lecture's PyTorch extensions quickly: what `load_cuda` runs.

The lecture builds a kernel and its C++ torch wrappers with `torch.utils.cpp_extension.load_inline`.
That compiles `<torch/extension.h>` (all of PyTorch's C++ API, pybind11 and Python's headers) twice
per build: once in the CUDA file and once in the generated binding file, and again after every edit.
Most of a minute goes there. This module builds the same two files with less:

- the CUDA file includes only what a kernel and its wrapper use (`LIGHT_TORCH_HEADERS`, at the top of
  `cuda_begin`: the tensor class, `torch::empty` / `zeros` / `ones`, `TORCH_CHECK` and CUDA error
  checks), not all of PyTorch;
- the binding file is our own: pybind11 with torch's tensor conversions and error handling, and the
  declarations from `cpp_src`, without the rest of PyTorch's C++ API;
- nvcc and the host compiler build the two at the same time, and each object file is cached by a hash of
  what went into it, so an edit of the kernel recompiles the CUDA file only.

If the CUDA file uses a part of PyTorch the light prelude leaves out, it is rebuilt once with the
whole `<torch/extension.h>` in front, so every source that built with `load_inline` still builds.
"""
import hashlib, importlib.util, os, re, subprocess, sysconfig
from concurrent.futures import ThreadPoolExecutor

from .compile_errors import CudaCompileError, compile_errors
from .cuda_toolkit import cache_dir, cuda_arch, nvcc_path, nvcc_version

# What a lecture-style kernel file needs from PyTorch, instead of <torch/extension.h>.
LIGHT_TORCH_HEADERS = r'''#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/zeros_ops.h>
#include <ATen/ops/ones_ops.h>
#include <c10/cuda/CUDAException.h>
// torch::empty, zeros and ones, defined as ATen's generated headers define them, on ATen's operator
// declarations (the *_ops.h headers) rather than on ATen/ops/empty.h and friends, which pull in ATen's
// whole runtime context and cost seconds per compile.
namespace torch {
using namespace at;
#ifndef COURSE_FULL_TORCH_HEADER   // with all of <torch/extension.h> in front, torch has these already
inline Tensor empty(IntArrayRef size, TensorOptions options = {}) {
    return at::_ops::empty_memory_format::call(c10::fromIntArrayRefSlow(size), c10::optTypeMetaToScalarType(options.dtype_opt()),
        options.layout_opt(), options.device_opt(), options.pinned_memory_opt(),
        c10::impl::check_tensor_options_and_extract_memory_format(options, std::nullopt));
}
inline Tensor zeros(IntArrayRef size, TensorOptions options = {}) {
    return at::_ops::zeros::call(c10::fromIntArrayRefSlow(size), c10::optTypeMetaToScalarType(options.dtype_opt()),
        options.layout_opt(), options.device_opt(), options.pinned_memory_opt());
}
inline Tensor ones(IntArrayRef size, TensorOptions options = {}) {
    return at::_ops::ones::call(c10::fromIntArrayRefSlow(size), c10::optTypeMetaToScalarType(options.dtype_opt()),
        options.layout_opt(), options.device_opt(), options.pinned_memory_opt());
}
#endif
}  // namespace torch
'''
FULL_TORCH_HEADER = '#define COURSE_FULL_TORCH_HEADER\n#include <torch/extension.h>\n'

BINDING_PRELUDE = r'''#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/Exceptions.h>
#include <ATen/core/Tensor.h>
namespace torch { using namespace at; }
'''

# Signs in a compiler log that the source used a part of PyTorch the light prelude does not declare
# (a learner's own typo does not match, so it is reported at once, without a second, slower build).
_MISSING_TORCH_NAME = re.compile(r'namespace "(torch|at|c10)[\w:]*" has no member'
                                 r'|identifier "(AT|TORCH|C10)_\w+" is undefined'
                                 r"|'(AT|TORCH|C10)_\w+' was not declared"
                                 r"|'\w+' is not a member of '(torch|at|c10)")


def _torch_flags():
    import torch
    from torch.utils.cpp_extension import include_paths
    incs = include_paths(device_type='cuda') + [sysconfig.get_paths()['include']]
    abi = f'-D_GLIBCXX_USE_CXX11_ABI={int(torch.compiled_with_cxx11_abi())}'
    return [f'-I{p}' for p in incs] + [abi, '-std=c++17']


def _link_flags():
    from torch.utils.cpp_extension import library_paths
    libs = library_paths(device_type='cuda')
    return ([f'-L{p}' for p in libs] + [f'-Wl,-rpath,{p}' for p in libs] +
            ['-lc10', '-lc10_cuda', '-ltorch_cpu', '-ltorch_cuda', '-ltorch', '-ltorch_python', '-lcudart'])


def _key(*parts):
    return hashlib.sha256('\0'.join(parts).encode()).hexdigest()[:16]


def _compile(cmd, src_path, out, verbose):
    "Run one compiler command unless `out` is cached; return the compiler's log on failure, else None."
    if out.exists(): return None
    tmp = out.with_suffix(f'.{os.getpid()}.tmp')
    if verbose: print(' '.join(cmd + [str(src_path), '-o', str(tmp)]))
    res = subprocess.run(cmd + [str(src_path), '-o', str(tmp)], capture_output=True, text=True)
    if res.returncode != 0: return res.stderr + res.stdout
    tmp.replace(out)
    return None


def build_extension(cuda_src, cpp_src, funcs, name, opt=True, verbose=False):
    """Compile `cuda_src` (kernels and torch wrappers) and bind the functions `funcs`, declared in
    `cpp_src`, into a Python module called `name`; return the module."""
    import torch
    nvcc = nvcc_path()
    cxx = os.environ.get('CXX', 'c++')
    common = _torch_flags()
    opt_flags = ['-O3'] if opt else ['-O0']
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS
    nvcc_cmd = [nvcc, '-c', *common, *COMMON_NVCC_FLAGS, f'-arch={cuda_arch()}', '-Xcompiler', '-fPIC',
                *opt_flags, '-Xptxas', opt_flags[0]]
    cxx_cmd = [cxx, '-c', *common, '-fPIC', *opt_flags]
    tools = nvcc_version(nvcc) + torch.__version__
    module = f'{name}_{_key(cpp_src, *funcs, *cxx_cmd, tools)[:8]}'
    binding = (BINDING_PRELUDE + cpp_src + f'\nPYBIND11_MODULE({module}, m) {{\n' +
               ''.join(f'    m.def("{f}", torch::wrap_pybind_function({f}), "{f}");\n' for f in funcs) + '}\n')
    work = cache_dir() / 'torch_extensions'
    work.mkdir(parents=True, exist_ok=True)

    def build(prelude):
        cu_text = prelude + cuda_src
        cu_key = _key(cu_text, *nvcc_cmd, tools)
        # each file in a folder named by what goes into it, under the name the lecture's build gives it
        srcs = {'cuda.cu': (work / f'cu_{cu_key}' / 'cuda.cu', cu_text, nvcc_cmd, work / f'cu_{cu_key}' / 'cuda.o'),
                'main.cpp': (work / module / 'main.cpp', binding, cxx_cmd, work / module / 'main.o')}
        for path, text, _, _ in srcs.values():
            path.parent.mkdir(exist_ok=True)
            if not path.exists() or path.read_text() != text: path.write_text(text)
        with ThreadPoolExecutor(2) as pool:     # nvcc and the host compiler at the same time
            logs = dict(zip(srcs, pool.map(lambda s: _compile(s[2], s[0], s[3], verbose), srcs.values())))
        return srcs, logs

    srcs, logs = build('')
    if logs['cuda.cu'] and _MISSING_TORCH_NAME.search(logs['cuda.cu']):
        srcs, logs = build(FULL_TORCH_HEADER)   # it uses more of PyTorch than its prelude declares
    failed = [log for log in logs.values() if log]
    if failed:
        learner = {'cuda.cu': cuda_src, 'main.cpp': cpp_src}
        raise CudaCompileError('\n'.join(compile_errors(log, learner) or log.strip()[-3000:] for log in failed))
    so = work / module / f'{module}_{_key(str(srcs["cuda.cu"][3]), str(srcs["main.cpp"][3]))}.so'
    if not so.exists():
        tmp = so.with_suffix(f'.{os.getpid()}.tmp')
        cmd = [cxx, '-shared', str(srcs['cuda.cu'][3]), str(srcs['main.cpp'][3]), *_link_flags(), '-o', str(tmp)]
        if verbose: print(' '.join(cmd))
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0: raise CudaCompileError(res.stderr.strip()[-3000:])
        tmp.replace(so)
    spec = importlib.util.spec_from_file_location(module, so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

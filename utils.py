"""The helpers every notebook of the course imports: open this file beside the lecture.

The first part is a drop-in for the lecture's own `utils.py`: the same names, argument order and
defaults (`cdiv`, `dim3`, `show_img`, `cuda_begin`, `get_sig`, `load_cuda`), so the lecture's notebooks
run unchanged on it. The second part imports what the course adds, from the `course` package, where each
concern has a module of its own (see `course/__init__.py` for the list):

- `%%needs_gpu` and `%%needs_nvcc` (`course.cell_magics`): cell magics for the cells that truly need a
  CUDA GPU (or the CUDA compiler). Elsewhere the cell prints one line saying what is missing.
- `compile_cuda` and `cuda_prelude` (`course.cuda_library`): the fastest way to compile a kernel, about
  a second (a `.cu` without torch, its launchers called through ctypes); `load_cuda` above takes ten
  seconds or so, `load_inline` a minute.
- `check_matmul_inputs` (`course.input_checks`): the input rules every matmul wrapper shares;
  `check_against_torch` and the test shapes (`course.correctness`): the one correctness check.
- `import_notebook` (`course.notebook_import`): the `#| export` cells of a notebook as a module, so tests
  and benchmarks use the very kernels the notebooks teach.
- `cuda_time_ms` (`course.timing`) and `kernel_output` (`course.printf_capture`): timing with CUDA
  events, and showing a kernel's printf in its cell.
- `cuda_disassembly` and `kernel_listing` (`course.disassembly`): the machine code of a kernel.
"""
import re
from collections import namedtuple

from course.cell_magics import CELL_REQUIREMENTS, SKIP_MARK, register_magics
from course.compile_errors import CudaCompileError
from course.correctness import (LECTURE_AND_AWKWARD_SHAPES, LECTURE_SHAPE, SMALL_AWKWARD_SHAPES,
                                SMALL_AWKWARD_SHAPES_AND_TILE_WIDTHS, check_against_torch, lecture_problem)
from course.cuda_library import CudaError, CudaModule, compile_cuda, cuda_prelude
from course.cuda_toolkit import (CudaUnavailableError, cuda_arch, describe_gpu, gpu_available, nvcc_available,
                                 require_cuda)
from course.disassembly import cuda_disassembly, kernel_listing
from course.input_checks import MAX_GRID_Y, check_matmul_inputs, check_tile_width, max_tile_width, row_chunks
from course.notebook_import import import_notebook
from course.printf_capture import kernel_output
from course.timing import cuda_time_ms
from course.torch_extension import LIGHT_TORCH_HEADERS, build_extension

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


# The prelude every lecture-style CUDA source starts with. It includes only the parts of PyTorch a
# kernel and its wrapper use (`torch::Tensor`, `torch::empty` and `zeros`, `TORCH_CHECK`), not all of
# <torch/extension.h>: that is most of why `load_cuda` is fast (see course/torch_extension.py).
# The CHECK_ macros raise Python's ValueError (TORCH_CHECK_VALUE), as the course's Python wrappers do.
# `CUDA_ERR` raises a Python exception (through TORCH_CHECK) instead of calling exit(): a failed CUDA
# call must not kill the Jupyter kernel.
# Keep TORCH_CHECK messages in such sources to one C string: see gpuAssert.
cuda_begin = LIGHT_TORCH_HEADERS + r'''#include <stdio.h>

#define CHECK_CUDA(x) TORCH_CHECK_VALUE(x.device().is_cuda(), #x " must be a CUDA tensor")
#define CHECK_CONTIGUOUS(x) TORCH_CHECK_VALUE(x.is_contiguous(), #x " must be contiguous")
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


def load_cuda(cuda_src, cpp_src, funcs, opt=True, verbose=False, name=None):
    """Compile `cuda_src` (CUDA C++ with torch wrappers) into a Python module, as the lecture does.
    `cpp_src` declares the wrappers (see `get_sig`) and `funcs` lists the ones to expose.

    The lecture uses `torch.utils.cpp_extension.load_inline`, which takes about a minute; this builds
    the same sources with lighter headers, both files at once, and caches each compiled file by its
    content (course/torch_extension.py). Compile errors come back short, pointing at the line of
    `cuda_src` they are about."""
    require_cuda('load_cuda')
    return build_extension(cuda_src, cpp_src, funcs, name or funcs[0], opt=opt, verbose=verbose)


register_magics()

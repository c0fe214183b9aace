"""How long a kernel takes to compile: the lecture's `load_cuda` against the course's `compile_cuda`.

    python bench/compile_time.py

One kernel, notebook 06's static-shared-memory matmul, compiled four ways in one run on this machine:
lecture-style `load_cuda` (torch headers in the .cu, the torch wrapper beside the kernel), first
compile under a fresh name and recompile after a one-line edit; and `compile_cuda`, first compile into
an empty cache and recompile after the same edit. Prints the seconds and the ratios. Needs a GPU.
"""
import os, sys, tempfile, time, uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import utils  # noqa: E402
from utils import cuda_begin, cuda_prelude, gpu_available, import_notebook  # noqa: E402

# The torch wrapper that the lecture-style source adds around the same kernel and launcher.
TORCH_WRAPPER = r'''
#include <ATen/cuda/CUDAContext.h>
torch::Tensor matmul_static_torch(torch::Tensor m, torch::Tensor n) {
    CHECK_INPUT(m); CHECK_INPUT(n);
    int h = m.size(0), w = n.size(1), k = m.size(1);
    TORCH_CHECK(k == n.size(0), "Size mismatch!");
    auto out = torch::empty({h, w}, m.options());
    CUDA_ERR(matmul_static(m.data_ptr<float>(), n.data_ptr<float>(), out.data_ptr<float>(), h, w, k,
                           at::cuda::getCurrentCUDAStream()));
    return out;
}
'''


def timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main():
    if not gpu_available():
        print("compile_time.py needs a CUDA GPU (load_cuda builds a module for one), and this machine has none.")
        return 0
    import torch
    kernel = import_notebook('06').static_cuda_src
    assert kernel.startswith(cuda_prelude)
    kernel_body = kernel[len(cuda_prelude):]
    edit = '\n// a one-line edit\n'
    lecture_src = cuda_begin + kernel_body + TORCH_WRAPPER
    sig = utils.get_sig('matmul_static_torch', lecture_src)
    name = f'compile_time_{uuid.uuid4().hex[:8]}'
    res = {}
    res['load_cuda, first compile'] = timed(lambda: utils.load_cuda(lecture_src, sig, ['matmul_static_torch'], name=name))
    res['load_cuda, after an edit'] = timed(lambda: utils.load_cuda(lecture_src + edit, sig, ['matmul_static_torch'], name=name))
    with tempfile.TemporaryDirectory() as cache:
        os.environ['COURSE_CUDA_CACHE'] = cache
        res['compile_cuda, first compile'] = timed(lambda: utils.compile_cuda(kernel))
        res['compile_cuda, after an edit'] = timed(lambda: utils.compile_cuda(kernel + edit))
        res['compile_cuda, notebook restarted (cached)'] = timed(lambda: utils.compile_cuda(kernel + edit))
    print(f"GPU: {torch.cuda.get_device_name()}, {os.cpu_count()} CPU cores, torch {torch.__version__}")
    for k, v in res.items(): print(f"{k:45s} {v:7.2f} s")
    for what in ('first compile', 'after an edit'):
        print(f"{what}: compile_cuda takes {res[f'compile_cuda, {what}'] / res[f'load_cuda, {what}']:.3f} of load_cuda's time")
    return 0


if __name__ == '__main__':
    sys.exit(main())

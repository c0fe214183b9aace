"""How long a kernel takes to compile: `load_cuda` and `compile_cuda` against torch's `load_inline`.

    python bench/compile_time.py [--readme]

Notebook 01's naive kernel with its C++ torch wrapper, compiled in one run on this machine:
- torch's `load_inline`, as the lecture calls it, with the lecture's prelude (all of <torch/extension.h>
  in front of the kernel): first compile under a fresh name, then after a one-line edit of the kernel;
- the course's `load_cuda` on the same source (with the course's `cuda_begin`): first compile into an
  empty cache, then after the same edit;
- `compile_cuda` on notebook 06's kernel (a `.cu` with no torch at all): first compile, after an edit,
  and cached.
Prints the seconds and "load_cuda takes R of load_inline's time" for the first compile and after an
edit; with --readme also writes them into README.md. Needs a GPU.
"""
import argparse, os, re, sys, tempfile, time, uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import utils  # noqa: E402
from utils import LIGHT_TORCH_HEADERS, cuda_begin, gpu_available, import_notebook  # noqa: E402

# The lecture's prelude: the same macros, after all of PyTorch's C++ API.
LECTURE_CUDA_BEGIN = ('#include <torch/extension.h>\n#include <c10/cuda/CUDAException.h>\n'
                      + cuda_begin[len(LIGHT_TORCH_HEADERS):])
EDIT = '\n// a one-line edit\n'


def timed(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def measure():
    from torch.utils.cpp_extension import load_inline
    nb01, nb06 = import_notebook('01'), import_notebook('06')
    src, cpp, funcs = nb01.naive_cuda_src, nb01.naive_cpp_src, nb01.naive_funcs
    assert src.startswith(cuda_begin)
    lecture_src = LECTURE_CUDA_BEGIN + src[len(cuda_begin):]
    res = {}
    with tempfile.TemporaryDirectory() as build:
        name = f'compile_time_{uuid.uuid4().hex[:8]}'
        inline = lambda s: load_inline(name, [cpp], cuda_sources=[s], functions=funcs, build_directory=build,
                                       extra_cuda_cflags=['-O3'])
        res['load_inline, first compile'] = timed(lambda: inline(lecture_src))
        res['load_inline, after an edit'] = timed(lambda: inline(lecture_src + EDIT))
    with tempfile.TemporaryDirectory() as cache:
        os.environ['COURSE_CUDA_CACHE'] = cache
        res['load_cuda, first compile'] = timed(lambda: utils.load_cuda(src, cpp, funcs))
        res['load_cuda, after an edit'] = timed(lambda: utils.load_cuda(src + EDIT, cpp, funcs))
        res['compile_cuda, first compile'] = timed(lambda: utils.compile_cuda(nb06.static_cuda_src))
        res['compile_cuda, after an edit'] = timed(lambda: utils.compile_cuda(nb06.static_cuda_src + EDIT))
        res['compile_cuda, notebook restarted (cached)'] = timed(lambda: utils.compile_cuda(nb06.static_cuda_src + EDIT))
    return res


def report(res):
    import torch
    lines = [f"GPU: {torch.cuda.get_device_name()}, {os.cpu_count()} CPU cores, torch {torch.__version__}"]
    lines += [f"{k:45s} {v:7.2f} s" for k, v in res.items()]
    for what in ('first compile', 'after an edit'):
        lines.append(f"{what}: load_cuda takes {res[f'load_cuda, {what}'] / res[f'load_inline, {what}']:.2f} of load_inline's time")
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--readme', action='store_true', help='write the results into README.md')
    a = ap.parse_args()
    if not gpu_available():
        print("compile_time.py needs a CUDA GPU (load_cuda builds a module for one), and this machine has none.")
        return 0
    text = report(measure())
    print(text)
    if a.readme:
        readme = ROOT / 'README.md'
        block = (f"<!-- compile:start -->\nOne run of `python bench/compile_time.py --readme`, printed as it came:\n\n"
                 f"```\n{text}\n```\n<!-- compile:end -->")
        new, count = re.subn(r'<!-- compile:start -->.*?<!-- compile:end -->', lambda _: block, readme.read_text(), flags=re.S)
        if count != 1: raise SystemExit("README.md has no compile-time markers to replace")
        readme.write_text(new)
    return 0


if __name__ == '__main__':
    sys.exit(main())

"Where the CUDA compiler and the GPU are, and a clear error when one is missing."
import functools, os, shutil, subprocess
from pathlib import Path


class CudaUnavailableError(RuntimeError):
    "Raised at once when something needs CUDA (a GPU, nvcc or a CUDA build of torch) that is missing."


def cuda_tool(name):
    """A CUDA toolkit program (nvcc, cuobjdump, ncu, ...): CUDA_HOME's (as torch finds it), else the one on
    PATH, else /usr/local/cuda's; None if none."""
    from torch.utils.cpp_extension import CUDA_HOME
    cand = [os.path.join(CUDA_HOME, 'bin', name)] if CUDA_HOME else []
    cand += [shutil.which(name) or '', f'/usr/local/cuda/bin/{name}']
    return next((c for c in cand if c and os.path.exists(c)), None)


def nvcc_path():
    "The nvcc executable (see cuda_tool); None if none."
    return cuda_tool('nvcc')


@functools.lru_cache(maxsize=None)
def nvcc_version(exe):
    "nvcc's version text, asked once per process: it is part of every cache key."
    return subprocess.run([exe, '--version'], capture_output=True, text=True).stdout


def gpu_available():
    "True when PyTorch can use a CUDA GPU."
    import torch
    return torch.cuda.is_available()


def gpus_available(count=2):
    "True when PyTorch can use at least `count` CUDA GPUs (a layer split over GPUs needs two or more)."
    import torch
    return torch.cuda.is_available() and torch.cuda.device_count() >= count


def tensor_cores_available():
    "True where there is a GPU whose tensor cores run mma.sync with bf16 and tf32 inputs and ldmatrix, cp.async: sm_80 or newer."
    if not gpu_available(): return False
    import torch
    return torch.cuda.get_device_capability() >= (8, 0)


def hopper_available():
    """True where there is a Hopper GPU (compute capability 9.0: H100, H200, GH200), whose sm_90a target has wgmma,
    setmaxnreg and the TMA unit that notebook 13's kernels use. Machine code built for sm_90a runs on 9.0 only."""
    if not gpu_available(): return False
    import torch
    return torch.cuda.get_device_capability() == (9, 0)


def nvcc_available():
    "True when the CUDA compiler nvcc is installed (it compiles kernels even where there is no GPU)."
    return nvcc_path() is not None


def require_cuda(what, need_gpu=True):
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
    if nvcc_path() is None:
        raise CudaUnavailableError(
            f"{what} needs the CUDA compiler nvcc, which is not on this machine: install the CUDA "
            "toolkit (or set CUDA_HOME to it) and restart the kernel.")


def cuda_arch():
    "The `sm_XY` of the current GPU, or `sm_90` (an H100) where there is no GPU to ask."
    import torch
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return f'sm_{major}{minor}'
    return 'sm_90'


def cache_dir():
    "Where compiled kernels are kept ($COURSE_CUDA_CACHE, else ~/.cache/cuda-course)."
    d = Path(os.environ.get('COURSE_CUDA_CACHE', Path.home() / '.cache' / 'cuda-course'))
    d.mkdir(parents=True, exist_ok=True)
    return d


def describe_gpu():
    "One line naming the GPU the notebook runs on, or saying that it runs in CPU mode."
    import torch
    return (f"GPU: {torch.cuda.get_device_name()}" if torch.cuda.is_available()
            else "GPU: none, so CPU mode: GPU cells print one line and are skipped; kernels are compiled where nvcc is")

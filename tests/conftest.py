import os, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Compiled kernels go to a cache inside the test session unless the caller chose one.
os.environ.setdefault('COURSE_CUDA_CACHE', str(ROOT / 'build' / 'cuda-cache'))

import torch  # noqa: E402

HAS_GPU = torch.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU (none on this machine)")


def load_script(relative, name):
    "A script of the repository (e.g. 'bench/bench.py') imported as module `name`, without running its main."
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_matches_torch(fn, h, k, w, device='cuda'):
    """fn(m, n) on random h x k and k x w inputs has the product's shape and agrees with a float64 product
    (TF32 off), to a tolerance that grows with the length k of each dot product."""
    torch.backends.cuda.matmul.allow_tf32 = False
    m, n = torch.randn(h, k, device=device), torch.randn(k, w, device=device)
    ref = (m.double() @ n.double()).float()
    out = fn(m, n)
    assert out.shape == (h, w)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4 * k ** 0.5)


def pytest_report_header(config):
    dev = torch.cuda.get_device_name() if HAS_GPU else 'none: CPU mode (GPU cells and tests are skipped, with reasons)'
    return [f"torch {torch.__version__}, CUDA GPU: {dev}"]

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


def pytest_report_header(config):
    dev = torch.cuda.get_device_name() if HAS_GPU else 'none: CPU mode (GPU cells and tests are skipped, with reasons)'
    return [f"torch {torch.__version__}, CUDA GPU: {dev}"]

"The benchmark commands: on a CPU-only machine they say in one line that they need a GPU, and exit 0."
import subprocess, sys

import pytest

from conftest import HAS_GPU, ROOT


@pytest.mark.skipif(HAS_GPU, reason="checks the CPU-only path")
@pytest.mark.parametrize('script', ['bench/bench.py', 'bench/compile_time.py'])
def test_benchmarks_say_they_need_a_gpu(script):
    res = subprocess.run([sys.executable, str(ROOT / script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 and 'needs a CUDA GPU' in lines[0]


def test_benchmark_uses_the_notebooks_kernels():
    "Notebook 11 builds its list of kernels from the teaching notebooks, not from copies."
    from course.notebook_import import exported_cells, NOTEBOOK_DIR
    src = '\n'.join(exported_cells(NOTEBOOK_DIR / '11_benchmarks.ipynb'))
    for nb in ('01', '05', '06', '07', '08', '09', '10'): assert f"'{nb}'" in src
    assert '__global__' not in src and '@cuda.jit' not in src

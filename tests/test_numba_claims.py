"""The facts notebooks 08 and 09 state about Numba and torch, checked against the installed packages, and
the reading of compute-sanitizer's report that notebook 08 prints."""
import os, subprocess, sys, textwrap

import pytest
import torch

from course import memcheck
from course.array_interface import torch_cuda_array_interface_entries
from course.memcheck import memcheck_findings, run_under_memcheck

HAS_GPU = torch.cuda.is_available()


def test_torchs_cuda_array_interface_is_version_2_and_names_no_stream():
    "Why as_cuda_array's `sync` does nothing with torch tensors: there is no stream in what torch exports."
    entries = torch_cuda_array_interface_entries()
    assert set(entries) == {'typestr', 'shape', 'strides', 'data', 'version'}
    assert entries['version'] == 2 and 'stream' not in entries


@pytest.mark.skipif(not HAS_GPU, reason="a CUDA tensor, and Numba's view of it, need a GPU")
def test_a_cuda_tensors_interface_matches_its_source_and_numbas_view_has_no_stream():
    from numba import cuda
    t = torch.rand(2, 3, device='cuda')
    assert set(t.__cuda_array_interface__) == set(torch_cuda_array_interface_entries())
    assert t.__cuda_array_interface__['version'] == 2
    assert cuda.as_cuda_array(t).stream == 0 and cuda.as_cuda_array(t, sync=False).stream == 0


SHARED_DTYPE_SCRIPT = '''
import numba, numpy as np
from numba import cuda
def kernel_with(dtype):
    @cuda.jit
    def k(out):
        s = cuda.shared.array(0, dtype=dtype)
        s[0] = np.float32(1.5)          # np.float32 as a value: fine in both
        cuda.syncthreads()
        out[0] = s[0]
    return k
for dtype in (numba.float32, np.float32):
    out = np.zeros(1, np.float32)
    try:
        kernel_with(dtype)[1, 1, 0, 4](out); print('ok', out[0])
    except TypeError as e: print('TypeError', e)
'''


def test_the_simulator_takes_numbas_float32_for_a_dynamic_shared_array_but_not_numpys():
    "Notebook 08's note on `cuda.shared.array(0, dtype=...)`: numba.float32 works in the simulator, np.float32 does not."
    res = subprocess.run([sys.executable, '-c', SHARED_DTYPE_SCRIPT], capture_output=True, text=True, timeout=120,
                         env={**os.environ, 'NUMBA_ENABLE_CUDASIM': '1'})
    first, second = res.stdout.splitlines()
    assert first == 'ok 1.5'
    assert second.startswith('TypeError') and 'getset_descriptor' in second


# Two layouts of memcheck's report: the source position on the `at` line or on a line of its own, and the
# address as "Address ..." or "Access to ...". The backtraces and the API errors after them are dropped.
REPORT = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at _ZN8__main__7total_kB2v1E5ArrayIfLi1E1C7mutable7alignedE+0x1b0 in /tmp/tmpab12/off_by_one.py:9
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f3a5e000014 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a5e000000 of size 20 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dfbef] in /lib/x86_64-linux-gnu/libcuda.so.1:12
=========
========= Invalid __global__ write of size 4 bytes
=========     at saxpy(float, const float *, float *)+0x100
=========        in /home/u/saxpy.cu:31
=========     by thread (255,0,0) in block (4095,0,0)
=========     Access to 0xd67bffffc is out of bounds
=========     and is 1 bytes after the nearest allocation at 0xd67800000 of size 4,194,300 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cuCtxSynchronize.
=========     Saved host backtrace up to driver entry point at error
========= ERROR SUMMARY: 3 errors
Traceback (most recent call last):
numba.cuda.cudadrv.driver.CudaAPIError: [719] Call to cuCtxSynchronize results in CUDA_ERROR_LAUNCH_FAILED
"""


def test_memcheck_findings_keep_what_when_where_who_and_how_far():
    errors, summary = memcheck_findings(REPORT)
    assert errors == [
        ['Invalid __global__ read of size 4 bytes', 'in off_by_one.py, line 9', 'by thread (0,0,0) in block (0,0,0)',
         'Address 0x7f3a5e000014 is out of bounds',
         'and is 1 bytes after the nearest allocation at 0x7f3a5e000000 of size 20 bytes'],
        ['Invalid __global__ write of size 4 bytes', 'in saxpy.cu, line 31', 'by thread (255,0,0) in block (4095,0,0)',
         'Access to 0xd67bffffc is out of bounds',
         'and is 1 bytes after the nearest allocation at 0xd67800000 of size 4,194,300 bytes']]
    assert summary == 'ERROR SUMMARY: 3 errors'


def test_memcheck_findings_of_a_clean_run_and_of_a_kernel_without_line_information():
    assert memcheck_findings("========= COMPUTE-SANITIZER\nok\n========= ERROR SUMMARY: 0 errors\n") == ([], 'ERROR SUMMARY: 0 errors')
    old = ("========= Invalid __shared__ read of size 4 bytes\n"
           "=========     at 0xd80 in /src/k.cu:162:void k<(bool)1>(float *)\n"
           "=========     at 0x70 in kernel_without_lineinfo\n")
    assert memcheck_findings(old) == ([['Invalid __shared__ read of size 4 bytes', 'in k.cu, line 162']], '')


def test_run_under_memcheck_says_none_where_the_sanitizer_is_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(memcheck, 'cuda_tool', lambda name: None)
    assert run_under_memcheck(tmp_path / 'any.py') is None


OFF_BY_ONE = textwrap.dedent('''
    import numpy as np
    from numba import cuda

    @cuda.jit(lineinfo=True)
    def last_plus_one_k(x, out):
        out[0] = x[x.size]            # one element past the end

    x = cuda.to_device(np.ones(3, np.float32))
    out = cuda.device_array(1, np.float32)
    last_plus_one_k[1, 1](x, out)
    cuda.synchronize()
''')


@pytest.mark.skipif(not HAS_GPU or memcheck.cuda_tool('compute-sanitizer') is None,
                    reason="needs a GPU and compute-sanitizer")
def test_memcheck_names_a_numba_kernels_read_past_the_end_and_its_line(tmp_path):
    script = tmp_path / 'off_by_one.py'
    script.write_text(OFF_BY_ONE)
    res = run_under_memcheck(script)
    errors, summary = memcheck_findings(res.stdout + res.stderr)
    assert errors and errors[0][0] == 'Invalid __global__ read of size 4 bytes', res.stdout + res.stderr
    assert 'in off_by_one.py, line 7' in errors[0]
    assert any('of size 12 bytes' in line for line in errors[0])
    assert summary.startswith('ERROR SUMMARY') and not summary.endswith(' 0 errors')


def test_the_exercise_checker_reads_memchecks_report_with_the_same_parser():
    "One parser of memcheck's report: the exercise checker's sentence is the first finding, as memcheck_findings reads it."
    from course.exercises.parts import sanitizer_sentence
    assert sanitizer_sentence('memcheck', REPORT, 1) == (
        "out of bounds on the GPU: Invalid __global__ read of size 4 bytes; in off_by_one.py, line 9; "
        "by thread (0,0,0) in block (0,0,0); Address 0x7f3a5e000014 is out of bounds")
    assert sanitizer_sentence('memcheck', "========= Program hit an error\n", 3).startswith(
        "compute-sanitizer's memcheck failed (exit code 3): Program hit an error")

"""Every GPU kernel of notebooks 10-13 stays right when captured once in a CUDA graph and replayed on new inputs
(notebook 09 teaches the pattern: copy new values into the captured tensors, replay, read the captured output),
and step 8 (stream-K) stays right, and gives the same bits, on two streams at once and while another stream's
kernel holds multiprocessors. On a CPU-only machine these tests skip, with their reason."""
import threading

import pytest
import torch

from conftest import gpu
from course.cuda_toolkit import hopper_available
from course.reduced_precision import check_graph_replays, error_against_float64, random_inputs
from utils import import_notebook

nb10, nb11, nb12, nb13 = (import_notebook(n) for n in ('10', '11', '12', '13'))
hopper = pytest.mark.skipif(not hopper_available(), reason="needs a Hopper GPU (compute capability 9.0)")


def replays_stay_right(fn, h, k, w, precision):
    assert check_graph_replays(fn, h, k, w, precision), f"a replay of {h} x {k} @ {k} x {w} is wrong"


def fp32_kernels():
    kernels = {name: fn for name, fn in nb10.ladder().items() if not name.startswith('07')}
    kernels['every shape, warp tile'] = nb11.every_shape(**nb10.WARP_TILE)
    kernels['every shape, split-K x 4'] = nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), 4)
    kernels['Numba twin'] = nb10.matmul_numba_warptiled
    return kernels


@gpu
@pytest.mark.parametrize('name', list(fp32_kernels()))
@pytest.mark.parametrize('h, k, w', [(300, 1000, 264), (129, 2050, 77)])
def test_notebook_10_kernels_replay_right(name, h, k, w):
    replays_stay_right(fp32_kernels()[name], h, k, w, 'fp32')


@gpu
@pytest.mark.parametrize('precision', ['bf16', 'tf32'])
@pytest.mark.parametrize('step', list(nb12.LADDER_STEPS))
def test_notebook_11_kernels_replay_right(step, precision):
    replays_stay_right(nb12.tensor_core(step, precision), 1000, 304, 704, precision)


STREAM_K_SHAPES = [(256, 8192, 4096),     # 16 long units, shared by every cluster
                   (2000, 2000, 2296),    # a whole round, then the rest shared
                   (512, 16384, 1024)]


@hopper
@pytest.mark.parametrize('step', list(nb13.HOPPER_STEPS))
def test_notebook_12_steps_replay_right(step):
    kernel = nb13.HopperMatmul(step)
    for h, k, w in STREAM_K_SHAPES[:2] + [(300, 1000, 264)]:    # the last: rows TMA cannot copy (the fallback)
        replays_stay_right(kernel, h, k, w, 'bf16')


@hopper
def test_step_8_shares_k_on_the_shapes_replayed():
    kernel = nb13.HopperMatmul('streamk')
    assert all(kernel.launch_plan(h, k, w)[2] > 0 for h, k, w in STREAM_K_SHAPES)


@hopper
def test_step_8_replays_right_with_a_measured_hand_over():
    replays_stay_right(nb13.HopperMatmul('streamk', HANDOVER=4), 4096, 4096, 4096, 'bf16')


@hopper
def test_gluon_kernel_replays_right():
    from course.gluon_matmul import gluon_unavailable
    if gluon_unavailable(): pytest.skip(gluon_unavailable())
    replays_stay_right(nb13.matmul_gluon, 1000, 304, 704, 'bf16')


def step_8_workspace_counters(kernel, stream):
    "The counters of the workspace step 8 keeps for `stream` on GPU 0."
    module = kernel.kernel.build()._module
    work = nb13.STREAM_K_WORKSPACES[0, stream.cuda_stream, module.path]
    return work[:module.workspace_size(1)]


@hopper
@pytest.mark.parametrize('h, k, w', STREAM_K_SHAPES)
def test_step_8_on_two_streams_at_once_gives_the_same_bits(h, k, w):
    """Two streams, each with inputs of its own, launch step 8 back to back at the same time: each result has the
    bits of the same product run alone, and every counter is back at 0 once they are done."""
    kernel = nb13.HopperMatmul('streamk')
    inputs = [random_inputs(h, k, w, 'bf16', seed=s) for s in (3, 4)]
    alone = [kernel(m, n) for m, n in inputs]
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream() for _ in inputs]
    outs = [[], []]
    for _ in range(8):
        for s, (m, n), out in zip(streams, inputs, outs):
            with torch.cuda.stream(s): out.append(kernel(m, n))
    torch.cuda.synchronize()
    for i, (out, expected) in enumerate(zip(outs, alone)):
        assert all(torch.equal(o, expected) for o in out), f"stream {i}: a result differs from the product run alone"
        assert not step_8_workspace_counters(kernel, streams[i]).any(), "a counter was left raised"
    assert error_against_float64(alone[0], *inputs[0], 'bf16')[0] <= 1


@hopper
def test_step_8_from_two_threads_at_once():
    "Two Python threads, each on a stream of its own, call step 8 at once: every result right, no hang."
    kernel = nb13.HopperMatmul('streamk')
    h, k, w = STREAM_K_SHAPES[0]
    inputs = [random_inputs(h, k, w, 'bf16', seed=s) for s in (5, 6)]
    alone = [kernel(m, n) for m, n in inputs]
    torch.cuda.synchronize()
    same = [None, None]

    def work(i):
        with torch.cuda.stream(torch.cuda.Stream()):
            outs = [kernel(*inputs[i]) for _ in range(6)]
            torch.cuda.current_stream().synchronize()
        same[i] = all(torch.equal(o, alone[i]) for o in outs)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads: t.start()
    for t in threads: t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread never finished"
    assert same == [True, True]


@hopper
def test_step_8_while_another_product_holds_multiprocessors():
    """A large product on another stream, launched first, holds multiprocessors while step 8 starts, so step 8's
    clusters start at different times and a cluster other than a unit's first may come last and finish it: the
    bits stay those of a run alone, and nothing waits for a cluster that cannot start."""
    kernel = nb13.HopperMatmul('streamk')
    m, n = random_inputs(*STREAM_K_SHAPES[0], 'bf16', seed=7)
    alone = kernel(m, n)
    big = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
    busy, other = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    for _ in range(5):
        with torch.cuda.stream(busy): big @ big
        with torch.cuda.stream(other): out = kernel(m, n)
        torch.cuda.synchronize()
        assert torch.equal(out, alone)

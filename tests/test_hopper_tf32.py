"""course.hopper_tf32: TF32 wgmma on the lecture's fp32 inputs, against float64 on awkward shapes, on padded copies, in
CUDA graphs and on side streams; its wgmma wrapper's text."""
import pytest
import torch

from course.cuda_toolkit import CudaUnavailableError, hopper_available
from course.hopper_tf32 import Tf32Matmul, TunedTf32, tf32_variant, wgmma_tf32_function
from course.reduced_precision import check_graph_replays, check_reduced_precision, error_against_float64, random_inputs
from utils import import_notebook, nvcc_available

hopper = pytest.mark.skipif(not hopper_available(), reason="needs a Hopper GPU (compute capability 9.0)")
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")
AWKWARD = [(1, 8, 8), (33, 40, 24), (129, 4096, 200), (300, 1000, 264), (1000, 304, 704), (5120, 256, 5120),
           (2000, 2000, 2296), (257, 32, 130)]
UNALIGNED = [(33, 17, 31), (300, 1001, 262), (1, 3, 5)]


@pytest.fixture(scope='module')
def nb13():
    return import_notebook('13')


def test_the_wrapper_names_every_accumulator_then_the_fragment_and_the_descriptor():
    text = wgmma_tf32_function(128)
    assert 'wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, ' in text and '%63}, {%64, %65, %66, %67}, %68, p, 1, 1;' in text
    assert 'setp.ne.b32 p, %69, 0;' in text and text.count('"+f"(d[') == 64


def test_tile_rows_are_the_wgmmas_n_and_clusters_pairs():
    with pytest.raises(ValueError, match='BM must be 128 or 256'): tf32_variant('', BM=64)
    with pytest.raises(ValueError, match='CLUSTER must be 1 or 2'): tf32_variant('', CLUSTER=4)


@needs_nvcc
@pytest.mark.parametrize('BM, CLUSTER', [(128, 1), (256, 1), (256, 2)])
def test_the_kernel_compiles_for_sm_90a(nb13, BM, CLUSTER):
    assert tf32_variant(nb13.HOPPER_SOURCE, BM=BM, CLUSTER=CLUSTER).build()._module is not None


@hopper
@pytest.mark.parametrize('BM, CLUSTER', [(128, 1), (256, 1), (256, 2), (128, 2)])
def test_tf32_wgmma_is_right_on_awkward_shapes(nb13, BM, CLUSTER, capsys):
    kernel = Tf32Matmul(tf32_variant(nb13.HOPPER_SOURCE, BM=BM, CLUSTER=CLUSTER))
    assert check_reduced_precision(kernel, 'tf32', AWKWARD + UNALIGNED, label=f"TF32 wgmma, BM {BM}, cluster {CLUSTER}"), \
        capsys.readouterr().out
    assert kernel.variant.resources()['local_bytes'] == 0


@hopper
@pytest.mark.parametrize('CLUSTER', [1, 2])
def test_tf32_wgmma_replays_in_a_cuda_graph_and_runs_on_two_streams(nb13, CLUSTER):
    kernel = Tf32Matmul(tf32_variant(nb13.HOPPER_SOURCE, CLUSTER=CLUSTER))
    assert check_graph_replays(kernel, 384, 1000, 640, 'tf32')
    m, n = random_inputs(1024, 512, 768, 'tf32')
    alone = kernel(m, n)
    outs, streams = [], [torch.cuda.Stream(), torch.cuda.Stream()]
    for s in streams:
        with torch.cuda.stream(s): outs.append(kernel(m, n))
    torch.cuda.synchronize()
    assert all(torch.equal(o, alone) for o in outs)


@hopper
def test_an_input_off_16_bytes_is_copied(nb13):
    kernel = Tf32Matmul(tf32_variant(nb13.HOPPER_SOURCE))
    m, n = random_inputs(300, 264, 136, 'tf32')
    m = torch.cat([torch.zeros(1, device='cuda'), m.flatten()])[1:].view(300, 264)
    assert m.data_ptr() % 16 and error_against_float64(kernel(m, n), m, n, 'tf32')[0] <= 1


@hopper
def test_bad_input_is_rejected(nb13):
    kernel = Tf32Matmul(tf32_variant(nb13.HOPPER_SOURCE))
    m, n = random_inputs(64, 64, 64, 'bf16')
    with pytest.raises(TypeError, match='float32'): kernel(m, n)
    with pytest.raises(ValueError, match='size mismatch'): kernel(m.float(), n.float()[:10])


def test_a_missing_hopper_is_said(nb13, monkeypatch):
    import course.hopper_tf32 as ht
    monkeypatch.setattr(ht, 'hopper_available', lambda: False)
    monkeypatch.setattr(torch.cuda, 'get_device_name', lambda *a: 'a test GPU')
    monkeypatch.setattr(ht, 'check_matmul_inputs', lambda m, n: (8, 8, 8))
    with pytest.raises(CudaUnavailableError, match='TF32 wgmma needs a Hopper GPU.*a test GPU'):
        Tf32Matmul(tf32_variant(nb13.HOPPER_SOURCE))(torch.zeros(8, 8), torch.zeros(8, 8))


def test_the_kernels_index_arithmetic_computes_the_tile():
    import numpy as np
    from course.hopper_tf32 import simulate_tile
    rng = np.random.default_rng(0)
    for bm in (128, 256):
        a, b = rng.standard_normal((bm, 24)), rng.standard_normal((24, 128))
        assert np.allclose(simulate_tile(a, b), a @ b)


@pytest.mark.parametrize('wrong', ['t and g swapped', 'k halves swapped', 'n halves swapped', 'store rows shifted',
                                   'store columns swapped'])
def test_a_wrong_place_or_store_gives_a_wrong_tile(wrong):
    import numpy as np
    from course.hopper_tf32 import kernel_fragment_place, kernel_store_place, simulate_tile
    place, store = kernel_fragment_place, kernel_store_place
    if wrong == 't and g swapped': place = lambda lane, r: (lane // 4 % 4 + 4 * (r // 2), lane % 4 * 2 + 8 * (r % 2))
    if wrong == 'k halves swapped': place = lambda lane, r: kernel_fragment_place(lane, r ^ 2)
    if wrong == 'n halves swapped': place = lambda lane, r: kernel_fragment_place(lane, r ^ 1)
    if wrong == 'store rows shifted': store = lambda lane, j, r: kernel_store_place(lane, j, r ^ 1)
    if wrong == 'store columns swapped': store = lambda lane, j, r: kernel_store_place(lane, j, r ^ 2)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((128, 16)), rng.standard_normal((16, 128))
    assert not np.allclose(simulate_tile(a, b, place, store), a @ b, equal_nan=False)


def test_the_fragment_drawing_labels_every_value_once():
    from course.hopper_tf32 import draw_b_fragment
    fig = draw_b_fragment()
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert len(labels) == len(set(labels)) == 128 and '0:a0' in labels and '31:a3' in labels


@hopper
def test_the_tuned_tf32_kernel_keeps_a_cluster_size_per_shape_and_stays_right(nb13, tmp_path, capsys):
    kernel = TunedTf32(nb13.HOPPER_SOURCE, path=tmp_path / 'tuning.json')
    assert check_reduced_precision(kernel, 'tf32', [(5120, 256, 5120), (300, 1001, 262), (129, 4096, 200)],
                                   label='TF32 wgmma, tuned'), capsys.readouterr().out
    kept = kernel.chosen(5120, 256, 5120)
    assert kept in kernel.candidates and kernel.chosen(5120, 256, 5120) is kept
    again = TunedTf32(nb13.HOPPER_SOURCE, path=tmp_path / 'tuning.json')          # a new session: read from disk
    assert again.chosen(5120, 256, 5120).params == kept.params
    assert check_graph_replays(kernel, 384, 1000, 640, 'tf32')

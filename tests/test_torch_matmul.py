"""course.torch_matmul: a drop-in for torch.matmul on 2-D and 3-D float32 tensors, reading operands where they lie.

On the CPU, with a stand-in kernel that reads memory exactly as the drop-in kernel does (each entry at its batch stride
from the operand's first element, stored row-major or transposed) and refuses anything else: checked with hypothesis
against torch.matmul on views of every layout, broadcast batches, empty dimensions and padded choices, the check itself
against wrong wrappers. On a GPU, notebook 17's kernel the same way, and on what hypothesis does not reach: long K
in many pieces, batches past the grid's 65535, a matrix of 2^31 elements or more, side streams and CUDA graphs."""
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import gpu
from course.torch_matmul import DropInMatmul, Operand, batch_chunk, plan, stored_transposed

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def read_as_the_kernel_does(op, batch, rows, cols):
    """The batch x rows x cols matrices the drop-in kernel reads from `op`: entry i at op.batch_stride x i elements past
    the first, stored rows x cols row-major, or cols x rows where op.transposed (torch.as_strided refuses a read past
    the tensor's storage)."""
    t = op.tensor
    assert t.dtype == torch.float32 and op.batch_stride >= 0
    stored = (cols, rows) if op.transposed else (rows, cols)
    x = torch.as_strided(t, (batch, *stored), (op.batch_stride, stored[1], 1), t.storage_offset())
    return x.transpose(1, 2) if op.transposed else x


class EmulatedKernel:
    "The drop-in kernel's arithmetic in float64 on the CPU, reading as it reads; it counts launches and keeps the choices."
    def __init__(self): self.launches, self.choices = 0, []

    def __call__(self, a, b, out, p, choice):
        assert isinstance(a, Operand) and isinstance(b, Operand) and out.is_contiguous()
        assert out.shape == p.out_shape and out.numel() == p.batch * p.m * p.n
        product = read_as_the_kernel_does(a, p.batch, p.m, p.k).double() @ read_as_the_kernel_does(b, p.batch, p.k, p.n).double()
        out.copy_(product.float().reshape(out.shape))
        self.launches += 1
        self.choices.append(choice)


def operand(draw, batch, rows, cols, layout):
    """A float32 tensor of (batch,) rows x cols in a drawn layout: row-major, transposed, a slice of columns, every other
    entry, off 16 bytes, or one entry expanded to the batch."""
    shape = ((batch,) if batch is not None else ()) + (rows, cols)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2**16))))
    if layout == 'transposed': return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == 'sliced': return torch.cat([x, torch.zeros(shape[:-1] + (3,))], dim=-1)[..., :cols]
    if layout == 'every other entry' and batch is not None: return torch.stack([x, x + 1], dim=1).flatten(0, 1)[::2]
    if layout == 'offset': return torch.cat([torch.zeros(1), x.flatten()])[1:].view(shape)   # not on 16 bytes
    if layout == 'expanded' and batch is not None: return x[:1].expand(shape)               # a batch stride of 0
    return x


@st.composite
def problems(draw, most=9):
    m, k, n = (draw(st.integers(0, most)) for _ in range(3))
    dims_a, dims_b = draw(st.sampled_from([(2, 2), (3, 2), (2, 3), (3, 3)]))
    batch = draw(st.integers(1, 4))
    batch_a = (draw(st.sampled_from([batch, 1])) if dims_a == 3 else None)
    batch_b = (draw(st.sampled_from([batch, 1])) if dims_b == 3 else None)
    layouts = st.sampled_from(['rows', 'transposed', 'sliced', 'every other entry', 'offset', 'expanded'])
    return operand(draw, batch_a, m, k, draw(layouts)), operand(draw, batch_b, k, n, draw(layouts))


def same_as_torch(matmul, a, b, tolerance=1e-6):
    """The check of every draw: torch.matmul's shape, dtype and values, within `tolerance` of float64 (relative and
    absolute; times K / 500 past K = 500, as float32's error of a sum grows with its length)."""
    out, expected = matmul(a, b), torch.matmul(a.double(), b.double()).float()
    tolerance *= max(1, a.shape[-1] / 500)
    assert out.shape == expected.shape and out.dtype == torch.float32
    torch.testing.assert_close(out.cpu(), expected.cpu(), rtol=tolerance, atol=tolerance)


@SETTINGS
@given(problems(), st.booleans())
def test_every_layout_and_batch_gives_torch_matmuls_result(ab, padded):
    kernel = EmulatedKernel()
    mm = DropInMatmul(kernel, lambda h, k, w: {'padded': padded})
    same_as_torch(mm, *ab)
    p = plan(*ab)
    assert kernel.launches == (p.batch > 0)                 # one kernel call, whatever the batch, none for an empty result
    same_as_torch(mm, *(t.as_strided(t.shape, t.stride(), t.storage_offset()) for t in ab))   # new views, a layout seen


def test_a_layout_seen_before_is_read_the_same_with_other_tensors():
    mm = DropInMatmul(EmulatedKernel())
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        a = torch.randn(2, 7, 5, generator=g).transpose(1, 2)            # entries stored transposed
        b = torch.randn(7, 9, generator=g)[:, :4]                          # a slice of columns: copied
        same_as_torch(mm, a, b)
        same_as_torch(mm, torch.randn(5, 7, generator=g).T, torch.randn(5, 4, generator=g))   # 2-D, A transposed
    assert len(mm._readings) == 2


def wrong_wrappers():
    "Wrappers that are wrong in one way each, which the check above must catch."
    right = DropInMatmul(EmulatedKernel())
    def flipped(op): return op._replace(transposed=not op.transposed)
    class Wrong(DropInMatmul):
        def __init__(self, change): super().__init__(lambda a, b, out, p, c: EmulatedKernel()(*change(a, b), out, p, c))
    yield 'no broadcast: always the first B', lambda a, b: right(a, b[:1].expand_as(b) if b.dim() == 3 else b)
    yield "A's layout ignored", Wrong(lambda a, b: (a._replace(transposed=False) if a.tensor.dim() == 2 else a, b))
    yield "B read transposed", Wrong(lambda a, b: (a, flipped(b) if b.tensor.shape[-1] == b.tensor.shape[-2] else b))
    yield 'batch stride of the entry, not the tensor', Wrong(lambda a, b: (a, b._replace(batch_stride=b.tensor[0].numel())
                                                                            if b.batch_stride else b))
    yield 'rows folded in the wrong order', lambda a, b: (right(a, b).transpose(0, 1).reshape(right(a, b).shape)
                                                          if a.dim() == 3 and b.dim() == 2 else right(a, b))
    yield 'float64 out', lambda a, b: right(a, b).double()
    yield 'the batch dropped', lambda a, b: right(a, b)[0] if a.dim() == 3 else right(a, b)
    yield 'padding left in C', lambda a, b: DropInMatmul(EmulatedKernel(), lambda *_: {'padded': True})(a, b)[..., :1]


@pytest.mark.parametrize('name, wrong', list(wrong_wrappers()), ids=lambda x: x if isinstance(x, str) else '')
def test_the_check_catches_each_wrong_wrapper(name, wrong):
    g = torch.Generator().manual_seed(1)
    cases = [(torch.randn(3, 4, 5, generator=g), torch.randn(5, 2, generator=g)),
             (torch.randn(3, 4, 5, generator=g), torch.randn(3, 5, 2, generator=g)),
             (torch.randn(4, 5, 5, generator=g)[::2], torch.randn(4, 5, 5, generator=g)[::2].transpose(1, 2)),
             (torch.randn(5, 4, generator=g).T, torch.randn(5, 3, generator=g))]
    caught = 0
    for a, b in cases:
        try: same_as_torch(wrong, a, b)
        except AssertionError: caught += 1
    assert caught, f"the check let '{name}' through on every case"


def test_views_are_read_where_they_lie_and_only_slices_are_copied():
    a, b = torch.randn(5, 7, 3), torch.randn(3, 4)
    assert plan(a, b)[:2] == ((5, 7, 4), 1) and plan(a, b).folded and plan(a, b).m == 35   # one product of the rows
    transposed_entries = a.transpose(1, 2).contiguous().transpose(1, 2)
    p = plan(transposed_entries, b)
    assert (p.batch, p.a_transposed, p.copies, p.folded) == (5, True, (), False)
    assert plan(a, b.T.contiguous().T).b_transposed and plan(a, b.T.contiguous().T).copies == ()
    assert plan(a[:, :, :2], b[:2]).copies == ('A',)                    # a slice of columns: copied
    assert plan(a[::2], b).batch == 3 and not plan(a[::2], b).folded   # entries apart: a batch stride, not folded


def test_batches_broadcast_in_one_launch():
    a, b = torch.randn(1, 2, 3), torch.randn(4, 3, 5)
    kernel = EmulatedKernel()
    torch.testing.assert_close(DropInMatmul(kernel)(a, b), a @ b)
    assert kernel.launches == 1 and plan(a, b).batch == 4
    assert plan(torch.randn(2, 3), b).batch == 4


def test_stored_transposed_tells_row_and_column_major_apart():
    x = torch.randn(4, 6)
    assert stored_transposed(x) is False and stored_transposed(x.T) is True and stored_transposed(x[:, :3]) is None
    assert stored_transposed(x[:1]) is False and stored_transposed(x.T[:, :1]) is False  # a row, a column of neighbours
    assert stored_transposed(x[:, :1]) is None and stored_transposed(x.T[:1]) is None   # floats 6 apart: neither


def test_the_choice_is_asked_for_the_whole_batch_and_padded_copies_are_row_major():
    kernel = EmulatedKernel()
    asked = []
    mm = DropInMatmul(kernel, lambda h, k, w: asked.append((h, k, w)) or {'padded': True})
    a, b = torch.randn(3, 5, 7).transpose(1, 2), torch.randn(3, 5, 6)          # entries of A transposed, K = 5
    torch.testing.assert_close(mm(a, b), a @ b)
    assert asked == [(21, 5, 6)]


def test_empty_dimensions_give_torchs_zeros_or_empty_results():
    mm = DropInMatmul(EmulatedKernel())
    assert torch.equal(mm(torch.randn(3, 0), torch.randn(0, 4)), torch.zeros(3, 4))
    assert mm(torch.randn(2, 0, 5), torch.randn(5, 4)).shape == (2, 0, 4)
    assert mm(torch.randn(0, 2, 5), torch.randn(0, 5, 4)).shape == (0, 2, 4)


def test_64_bit_rows_where_a_matrix_or_the_padded_workspace_passes_2_to_the_31():
    rows = torch.empty(2**20, 8, device='meta')
    assert plan(rows, torch.empty(8, 2044, device='meta')).wide is False       # C: 2^20 x 2044, under 2^31
    assert plan(rows, torch.empty(8, 2045, device='meta')).wide is True        # its rows padded to 2048 in split-K
    assert plan(torch.empty(2**16, 2**15, device='meta'), torch.empty(2**15, 1, device='meta')).wide is True   # A: 2^31


def test_batch_chunks_fit_the_grid_and_an_int_of_rows():
    assert batch_chunk(1) == 65535 and batch_chunk(2**20) == 2047 and batch_chunk(2**31 - 1) == 1


@pytest.mark.parametrize('a, b, said', [
    (torch.randn(3), torch.randn(3, 2), 'A has 1 dimension(s) (for a vector'),
    (torch.randn(2, 2, 3, 4), torch.randn(4, 2), 'A has 4 dimension'),
    (torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 2), 'A is torch.float64'),
    (torch.randn(3, 4), torch.randn(5, 2), "A's columns must match B's rows"),
    (torch.randn(2, 3, 4), torch.randn(3, 4, 2), 'do not broadcast'),
    ([[1.0]], torch.randn(1, 1), 'A is a list, not a tensor'),
    (torch.randn(3, 4, requires_grad=True), torch.randn(4, 2), 'has no backward'),
    (torch.randn(1, 1).expand(256, 2**23 + 1), torch.randn(1, 1).expand(2**23 + 1, 1), 'k = 8388609 is over 8388608 in a matrix of 2^31'),
])
def test_bad_inputs_are_refused_with_what_matmul_takes(a, b, said):
    with pytest.raises(ValueError, match='matmul takes two float32 tensors') as e:
        DropInMatmul(EmulatedKernel())(a, b)
    assert said in str(e.value)


# On a GPU: notebook 17's kernel, tuned by notebook 11's tuner.

def drop_in():
    from utils import import_notebook
    return import_notebook('17')


@gpu
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(problems(most=300))
def test_notebook_17s_kernel_is_torch_matmul_on_a_gpu(ab):
    same_as_torch(drop_in().matmul, *(t.cuda() for t in ab), tolerance=1e-4)


@gpu
@pytest.mark.parametrize('layout', ['rows', 'A.T', 'B.T', 'both'])
@pytest.mark.parametrize('splits', [1, 3, 40, 128])
def test_every_layout_with_k_in_pieces_on_a_gpu(layout, splits):
    nb17 = drop_in()
    mm = nb17.matmul_with(dict(nb17.nb11.WARP_TILE, MIN_BLOCKS=2, GROUP=8, splits=splits))
    g = torch.Generator(device='cuda').manual_seed(splits)
    for m, k, n in ((129, 3001, 263), (777, 1234, 999), (4, 8192, 5), (256, 2048, 128)):
        a = torch.randn(m, k, device='cuda', generator=g) if layout in ('rows', 'B.T') else torch.randn(k, m, device='cuda', generator=g).T
        b = torch.randn(k, n, device='cuda', generator=g) if layout in ('rows', 'A.T') else torch.randn(n, k, device='cuda', generator=g).T
        same_as_torch(mm, a, b, tolerance=1e-4)
        assert mm(a, b).equal(mm(a, b))                            # the pieces added in the same order every call


@gpu
@pytest.mark.parametrize('layout', ['rows', 'A.T', 'B.T', 'both'])
def test_one_row_or_one_column_in_every_layout_on_a_gpu(layout):
    mm = drop_in().matmul
    g = torch.Generator(device='cuda').manual_seed(7)
    for m, k, n in ((3001, 4099, 1), (1, 4099, 3001), (1, 8, 1), (8192, 64, 1), (1, 64, 333)):
        a = torch.randn(k, m, device='cuda', generator=g).T if layout in ('A.T', 'both') else torch.randn(m, k, device='cuda', generator=g)
        b = torch.randn(n, k, device='cuda', generator=g).T if layout in ('B.T', 'both') else torch.randn(k, n, device='cuda', generator=g)
        same_as_torch(mm, a, b, tolerance=1e-5)
        same_as_torch(mm, a[None].expand(3, -1, -1), b, tolerance=1e-5)                       # a batch with stride 0
    same_as_torch(mm, torch.randn(70000, 1, 6, device='cuda'), torch.randn(70000, 6, 3, device='cuda'), tolerance=1e-5)


@gpu
def test_batches_past_the_grids_65535_entries():
    a, b = torch.randn(70000, 3, 5, device='cuda'), torch.randn(70000, 5, 2, device='cuda').transpose(1, 2).contiguous().transpose(1, 2)
    same_as_torch(drop_in().matmul, a, b, tolerance=1e-5)


@gpu
def test_a_matrix_of_more_than_2_to_the_31_elements():
    m, k, n = 2**16 + 3, 2**15 + 3, 5                         # A: more than 2^31 elements
    tolerance = 1e-4 * k / 500                                # float32 sums of k products (see same_as_torch)
    if torch.cuda.get_device_properties(0).total_memory < 40 * 2**30: pytest.skip("needs 40 GB of GPU memory")
    a = torch.empty(m, k, device='cuda').uniform_(-1, 1)
    b = torch.randn(k, n, device='cuda')
    out = drop_in().matmul(a, b)
    for rows in (slice(0, 64), slice(m - 64, m), slice(2**15, 2**15 + 64)):     # rows past 2^31 / k checked
        torch.testing.assert_close(out[rows], (a[rows].double() @ b.double()).float(), rtol=tolerance, atol=tolerance)
    bt = torch.randn(m, n, device='cuda')                     # A stored transposed: a.T, 32771 x 65539, K = 65539
    out = drop_in().matmul(a.T, bt)
    for rows in (slice(0, 64), slice(k - 64, k)):
        torch.testing.assert_close(out[rows], (a.T[rows].double() @ bt.double()).float(), rtol=1e-4 * m / 500,
                                   atol=1e-4 * m / 500)


@gpu
def test_side_streams_and_cuda_graph_replay():
    mm = drop_in().matmul
    a, b = torch.randn(3, 300, 2000, device='cuda').transpose(1, 2), torch.randn(300, 700, device='cuda')
    expected = (a.double() @ b.double()).float()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side): out = mm(a, b)
    torch.cuda.current_stream().wait_stream(side)
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    mm(a, b)                                                   # tuned and built before the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph): captured = mm(a, b)
    a.copy_(a * 2)
    graph.replay()
    torch.testing.assert_close(captured, 2 * expected, rtol=1e-4, atol=1e-4)

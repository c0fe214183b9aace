"""course.torch_matmul: a 2-D kernel made a drop-in for torch.matmul on 2-D and 3-D float32 tensors. Checked with
hypothesis against torch.matmul on views of every layout, broadcast batches and empty dimensions, with a strict 2-D
stand-in kernel (float64 on the CPU, refusing what the course's kernels refuse); on a GPU, with notebook 11's kernel."""
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import gpu
from course.torch_matmul import as_torch_matmul, plan, rows_of

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


class StrictKernel:
    "A 2-D kernel that takes only what the course's kernels take (2-D, float32, row-major), and counts its calls."
    def __init__(self): self.calls = 0

    def __call__(self, m, n):
        assert m.dim() == n.dim() == 2 and m.dtype == n.dtype == torch.float32 and m.shape[1] == n.shape[0]
        for t in (m, n): assert t.is_contiguous(), f"the kernel got strides {t.stride()} for shape {tuple(t.shape)}"
        self.calls += 1
        return (m.double() @ n.double()).float()


def operand(draw, batch, rows, cols, layout):
    "A float32 tensor of (batch,) rows x cols in a drawn layout: row-major, a transposed view, or a slice of a wider one."
    shape = ((batch,) if batch is not None else ()) + (rows, cols)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(draw(st.integers(0, 2**16))))
    if layout == 'transposed': return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == 'sliced': return torch.cat([x, torch.zeros(shape[:-1] + (3,))], dim=-1)[..., :cols]
    return x


@st.composite
def problems(draw):
    m, k, n = (draw(st.integers(0, 9)) for _ in range(3))
    dims_a, dims_b = draw(st.sampled_from([(2, 2), (3, 2), (2, 3), (3, 3)]))
    batch = draw(st.integers(1, 4))
    batch_a = (draw(st.sampled_from([batch, 1])) if dims_a == 3 else None)
    batch_b = (draw(st.sampled_from([batch, 1])) if dims_b == 3 else None)
    layouts = st.sampled_from(['rows', 'transposed', 'sliced'])
    return operand(draw, batch_a, m, k, draw(layouts)), operand(draw, batch_b, k, n, draw(layouts))


def same_as_torch(matmul, a, b, kernel=None):
    "The check of every draw: torch.matmul's shape, dtype and values, and (with `kernel`) plan's count of products."
    out, expected = matmul(a, b), torch.matmul(a.double(), b.double()).float()
    assert out.shape == expected.shape and out.dtype == torch.float32
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)
    if kernel is not None: assert kernel.calls == plan(a, b).products


@SETTINGS
@given(problems())
def test_every_layout_and_batch_gives_torch_matmuls_result(ab):
    kernel = StrictKernel()
    same_as_torch(as_torch_matmul(kernel), *ab, kernel)


def wrong_wrappers():
    "Wrappers that are wrong in one way each, which the check above must catch."
    kernel = StrictKernel()
    right = as_torch_matmul(kernel)
    yield 'no broadcast: always the first B', lambda a, b: right(a, b[:1].expand_as(b) if b.dim() == 3 else b)
    yield 'a transposed view passed as it is', lambda a, b: kernel(a.T.contiguous().T, b) if a.dim() == 2 else right(a, b)
    yield 'rows folded in the wrong order', lambda a, b: (right(a, b).transpose(0, 1).reshape(right(a, b).shape)
                                                          if a.dim() == 3 and b.dim() == 2 else right(a, b))
    yield 'float64 out', lambda a, b: right(a, b).double()
    yield 'the batch dropped', lambda a, b: right(a, b)[0] if a.dim() == 3 else right(a, b)


@pytest.mark.parametrize('name, wrong', list(wrong_wrappers()), ids=lambda x: x if isinstance(x, str) else '')
def test_the_check_catches_each_wrong_wrapper(name, wrong):
    g = torch.Generator().manual_seed(1)
    cases = [(torch.randn(3, 4, 5, generator=g), torch.randn(5, 2, generator=g)),
             (torch.randn(3, 4, 5, generator=g), torch.randn(3, 5, 2, generator=g)),
             (torch.randn(5, 4, generator=g).T, torch.randn(5, 3, generator=g))]
    caught = 0
    for a, b in cases:
        try: same_as_torch(wrong, a, b)
        except AssertionError: caught += 1
    assert caught, f"the check let '{name}' through on every case"


def test_a_batch_times_a_matrix_is_one_product_without_a_copy():
    a, b = torch.randn(5, 7, 3), torch.randn(3, 4)
    kernel = StrictKernel()
    assert torch.allclose(as_torch_matmul(kernel)(a, b), a @ b, atol=1e-5) and kernel.calls == 1
    assert plan(a, b) == ((5, 7, 4), 1, (), True)
    assert plan(a.transpose(1, 2).contiguous().transpose(1, 2), b).copies == ('A',)   # rows not contiguous: copied
    assert plan(a, b.T.contiguous().T).copies == ('B',)


def test_batches_broadcast_and_launch_once_per_entry():
    a, b = torch.randn(1, 2, 3), torch.randn(4, 3, 5)
    kernel = StrictKernel()
    torch.testing.assert_close(as_torch_matmul(kernel)(a, b), a @ b)
    assert kernel.calls == 4 and plan(a, b) == ((4, 2, 5), 4, (), False)
    assert plan(torch.randn(2, 3), b).products == 4


def test_empty_dimensions_give_torchs_zeros_or_empty_results():
    mm = as_torch_matmul(StrictKernel())
    assert torch.equal(mm(torch.randn(3, 0), torch.randn(0, 4)), torch.zeros(3, 4))
    assert mm(torch.randn(2, 0, 5), torch.randn(5, 4)).shape == (2, 0, 4)
    assert mm(torch.randn(0, 2, 5), torch.randn(0, 5, 4)).shape == (0, 2, 4)


def test_rows_of_copies_only_what_is_not_row_major():
    x = torch.randn(4, 6)
    assert rows_of(x) is x and rows_of(x[1:3]) is x[1:3] or rows_of(x[1:3]).data_ptr() == x[1:3].data_ptr()
    assert rows_of(x.T).is_contiguous() and torch.equal(rows_of(x.T), x.T)
    assert rows_of(x[:, :3]).is_contiguous() and torch.equal(rows_of(x[:, :3]), x[:, :3])


@pytest.mark.parametrize('a, b, said', [
    (torch.randn(3), torch.randn(3, 2), 'A has 1 dimension(s) (for a vector'),
    (torch.randn(2, 2, 3, 4), torch.randn(4, 2), 'A has 4 dimension'),
    (torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 2), 'A is torch.float64'),
    (torch.randn(3, 4), torch.randn(5, 2), "A's columns must match B's rows"),
    (torch.randn(2, 3, 4), torch.randn(3, 4, 2), 'do not broadcast'),
    ([[1.0]], torch.randn(1, 1), 'A is a list, not a tensor'),
])
def test_bad_inputs_are_refused_with_what_matmul_takes(a, b, said):
    with pytest.raises(ValueError, match='matmul takes two float32 tensors') as e:
        as_torch_matmul(StrictKernel())(a, b)
    assert said in str(e.value)


@gpu
@SETTINGS
@given(problems())
def test_notebook_11s_kernel_as_torch_matmul_on_a_gpu(ab):
    from utils import import_notebook
    a, b = (t.cuda() for t in ab)
    out = as_torch_matmul(import_notebook('11').matmul_fp32)(a, b)
    expected = torch.matmul(a.double(), b.double()).float()
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)

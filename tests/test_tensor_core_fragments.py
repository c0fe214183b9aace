"""The Python model of mma.sync's fragments (course/tensor_core_fragments.py): the lane -> element maps of the
PTX ISA for m16n8k16 (bf16) and m16n8k8 (tf32), the registers of a tile, one warp's mma, and TF32/bf16 rounding."""
import numpy as np
import pytest

from course.tensor_core_fragments import (M16N8K8, M16N8K16, SHAPES, WARP, draw_fragments, element, from_registers,
                                          owners, round_to_bf16, round_to_tf32, to_registers, warp_mma)


@pytest.mark.parametrize('shape', SHAPES, ids=lambda s: s.name)
@pytest.mark.parametrize('operand', 'abc')
def test_every_element_is_held_by_exactly_one_lane(shape, operand):
    grid = owners(shape, operand)                     # raises if an element is held twice
    rows, cols = shape.size(operand)
    assert len(grid) == rows and all(len(row) == cols and None not in row for row in grid)
    assert shape.elements(operand) * WARP == rows * cols


def test_the_ptx_isas_positions_for_lane_0_and_lane_5():
    "Written out from the PTX ISA's fragment figures: a wrong formula moves at least one of these."
    assert [element(M16N8K16, 'a', 0, i) for i in range(8)] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 9), (8, 8), (8, 9)]
    assert [element(M16N8K16, 'b', 5, i) for i in range(4)] == [(2, 1), (3, 1), (10, 1), (11, 1)]
    assert [element(M16N8K16, 'c', 5, i) for i in range(4)] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert [element(M16N8K8, 'a', 5, i) for i in range(4)] == [(1, 1), (9, 1), (1, 5), (9, 5)]
    assert [element(M16N8K8, 'b', 5, i) for i in range(2)] == [(1, 1), (5, 1)]
    with pytest.raises(ValueError): element(M16N8K8, 'a', 0, 4)
    with pytest.raises(ValueError): element(M16N8K16, 'c', 32, 0)


@pytest.mark.parametrize('shape', SHAPES, ids=lambda s: s.name)
def test_registers_round_trip_and_a_warp_mma_is_a_b_plus_c(shape):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(shape.size(op)) for op in 'abc')
    regs = {op: to_registers(shape, op, x) for op, x in zip('abc', (a, b, c))}
    assert np.array_equal(np.array(from_registers(shape, 'a', regs['a'])), a)
    d = np.array(from_registers(shape, 'd', warp_mma(shape, regs['a'], regs['b'], regs['c'])))
    np.testing.assert_allclose(d, a @ b + c, rtol=1e-12)
    # registers from the wrong map (A's elements swapped between two lanes) give a different product
    wrong = [row[:] for row in regs['a']]
    wrong[0], wrong[1] = wrong[1], wrong[0]
    assert not np.allclose(np.array(from_registers(shape, 'd', warp_mma(shape, wrong, regs['b'], regs['c']))), d)


def test_tf32_keeps_10_mantissa_bits_rounding_to_nearest():
    x = np.array([1.0, 1 + 2**-10, 1 + 2**-11, 1 + 2**-11 + 2**-20, -(1 + 2**-12), 3.0e38, np.inf], dtype=np.float32)
    t = round_to_tf32(x)
    assert list(t[:2]) == [1.0, 1 + 2**-10]                     # representable: unchanged
    assert t[2] == 1 + 2**-10 and t[3] == 1 + 2**-10            # a tie rounds away from zero; above it, up
    assert t[4] == -1.0 and np.isinf(t[6])
    big = np.random.default_rng(1).standard_normal(10000).astype(np.float32)
    assert np.max(np.abs(round_to_tf32(big) - big) / np.abs(big)) <= 2**-11
    assert np.all((round_to_tf32(big).view(np.uint32) & 0x1FFF) == 0)


def test_bf16_keeps_8_mantissa_bits():
    x = np.random.default_rng(2).standard_normal(10000).astype(np.float32)
    r = round_to_bf16(x)
    assert np.all((r.view(np.uint32) & 0xFFFF) == 0) and np.max(np.abs(r - x) / np.abs(x)) <= 2**-8


def test_the_drawing_colours_one_lanes_elements():
    fig = draw_fragments(M16N8K16, lane=5)
    coloured = {p.get_gid() for ax in fig.axes for p in ax.patches if p.get_facecolor()[:3] != (0.93, 0.93, 0.93)}
    expected = {f'{op} {r} {c} lane 5' for op in 'abc' for r, c in (element(M16N8K16, op, 5, i)
                                                                       for i in range(M16N8K16.elements(op)))}
    assert coloured == expected
    assert len(fig.axes) == 3 and sum(len(ax.patches) for ax in fig.axes) == 16 * 16 + 16 * 8 + 16 * 8


from course.tensor_core_fragments import ldmatrix, ldmatrix_passes, swizzled_offset


def a_tile_row_starts(row_elements, offset=lambda r, c, w: r * w + c):
    "Lane l points at row l % 16, column (l // 16) * 8 of a 16 x 16 tile of A: the usual x4 load of an A fragment."
    return [offset(lane % 16, lane // 16 * 8, row_elements) for lane in range(WARP)]


@pytest.mark.parametrize('row_elements', [16, 64])
def test_ldmatrix_x4_of_a_16x16_tile_gives_the_m16n8k16_a_fragment(row_elements):
    a = np.arange(16 * 16).reshape(16, 16)
    shared = np.zeros(16 * row_elements, dtype=int)
    for r in range(16): shared[r * row_elements: r * row_elements + 16] = a[r]
    regs = ldmatrix(list(shared), a_tile_row_starts(row_elements))
    fragment = to_registers(M16N8K16, 'a', a)
    assert [[v for pair in lane for v in pair] for lane in regs] == [[int(v) for v in lane] for lane in fragment]


def test_ldmatrix_trans_gives_the_transposed_matrix():
    m = np.arange(64).reshape(8, 8)
    regs = ldmatrix(list(m.flatten()), [8 * r for r in range(8)], matrices=1, trans=True)
    assert [regs[lane][0] for lane in (0, 5)] == [(m[0, 0], m[1, 0]), (m[2, 1], m[3, 1])]


def test_row_major_ldmatrix_conflicts_and_the_swizzle_removes_them():
    "A 64-wide bf16 tile puts every row at the same banks: 8-way; XOR-swizzling the 16-byte chunks makes it 1."
    assert ldmatrix_passes(a_tile_row_starts(64)) == [8, 8, 8, 8]
    assert ldmatrix_passes(a_tile_row_starts(16)) == [2, 2, 2, 2]          # 32-byte rows: 4 rows per 128 bytes
    swizzled = a_tile_row_starts(64, offset=lambda r, c, w: swizzled_offset(r, c, w))
    assert ldmatrix_passes(swizzled) == [1, 1, 1, 1]
    # the swizzle is a permutation of each row's chunks: nothing is lost or stored twice
    assert sorted(swizzled_offset(r, c) for r in range(8) for c in range(64)) == list(range(8 * 64))


def test_the_swizzle_drawing_puts_one_chunk_in_eight_bank_groups():
    from course.tensor_core_fragments import draw_swizzle
    fig = draw_swizzle(read_chunk=3)
    red = {p.get_gid() for ax in fig.axes for p in ax.patches if p.get_facecolor()[:3] != (0.93, 0.93, 0.93)}
    plain = {g for g in red if g.startswith('as it is')}
    swizzled = {g for g in red if g.startswith('XOR')}
    assert plain == {f'as it is:{r}:3' for r in range(8)}                        # one column: the same 4 banks
    assert swizzled == {f'XOR-swizzled:{r}:{3 ^ r}' for r in range(8)}           # 8 places: 8 bank groups
    assert '8 passes' in fig.axes[0].get_title() and '1 pass' in fig.axes[1].get_title()

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

"""course.issue_model: the issue-bound time of an fp32 product, the shares of a scheduler's cycles, the factors a gap
splits into, and what a cuBLAS kernel's name says; course.drawings.draw_issue_slots draws the shares."""
import math

import pytest

from course.drawings import draw_issue_slots
from course.issue_model import (ffma_warp_instructions, gap_factors, issue_bound_ms, issue_shares,
                                library_kernel_traits, tile_in_our_terms)

H100 = dict(sms=132, clock_hz=1.98e9)


def test_one_ffma_a_cycle_on_every_scheduler_is_the_datasheet_peak():
    ms = issue_bound_ms(ffma_warp_instructions(4096, 4096, 4096), **H100)
    assert 2 * 4096**3 / (ms * 1e-3) == pytest.approx(132 * 128 * 2 * 1.98e9)   # 128 fp32 lanes a multiprocessor
    assert ffma_warp_instructions(3, 5, 7) == 3 * 5 * 7 / 32


def test_issuing_on_half_the_cycles_takes_twice_as_long():
    assert issue_bound_ms(1e9, issue_fraction=0.5, **H100) == pytest.approx(2 * issue_bound_ms(1e9, **H100))
    for wrong in (0, -0.5, 1.5):
        with pytest.raises(ValueError, match='fraction'): issue_bound_ms(1e9, issue_fraction=wrong, **H100)


def test_the_shares_of_a_schedulers_cycles_add_up_and_put_the_ffmas_first():
    shares = issue_shares(warp_instructions=120, ffma_instructions=100, issue_fraction=0.9)
    assert sum(shares.values()) == pytest.approx(1)
    assert shares['FFMA issued'] == pytest.approx(0.75) and shares['nothing issued'] == pytest.approx(0.1)
    assert shares['other instruction issued'] == pytest.approx(0.15)
    for wrong in (dict(warp_instructions=100, ffma_instructions=120, issue_fraction=0.9),   # more FFMAs than instructions
                  dict(warp_instructions=100, ffma_instructions=0, issue_fraction=0.9),
                  dict(warp_instructions=100, ffma_instructions=90, issue_fraction=1.2)):
        with pytest.raises(ValueError): issue_shares(**wrong)


@pytest.mark.parametrize('ours, theirs', [
    (dict(instructions=2.34e9, issue=0.82, clock=1.97e9), dict(instructions=2.43e9, issue=0.90, clock=1.97e9)),
    (dict(instructions=3e9, issue=0.5, clock=1.5e9), dict(instructions=2e9, issue=0.95, clock=1.98e9)),
    (dict(instructions=2e9, issue=0.95, clock=1.98e9), dict(instructions=2e9, issue=0.95, clock=1.98e9))])
def test_the_gap_factors_multiply_to_the_models_time_ratio(ours, theirs):
    f = gap_factors(ours, theirs)
    time = lambda k: issue_bound_ms(k['instructions'], 132, k['clock'], k['issue'])
    assert f['product'] == pytest.approx(time(ours) / time(theirs))
    assert f['product'] == pytest.approx(f['instructions'] * f['issue'] * f['clock'])
    assert (f['instructions'] > 1) == (ours['instructions'] > theirs['instructions'])   # above 1: ours is the slower
    assert (f['issue'] > 1) == (ours['issue'] < theirs['issue'])
    assert (f['clock'] > 1) == (ours['clock'] < theirs['clock'])


def test_a_cublas_kernels_name_says_its_tile_buffers_warps_and_math():
    xmma = 'sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas'
    assert library_kernel_traits(xmma) == {'tile': (256, 128, 8), 'stages': 3, 'warps': (4, 2), 'math': 'ffma',
                                           'arch': 'sm80'}
    assert library_kernel_traits('cutlass_80_simt_sgemm_128x64_8x5_nn_align1') == {'tile': (128, 64, 8), 'stages': 5,
                                                                                    'math': 'simt'}
    assert library_kernel_traits('void every_shape<128, 256, 16>(float const*)') == {}


def test_the_grid_says_which_way_a_cublas_tile_lies_on_our_c():
    xmma = library_kernel_traits('sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_'
                                 'alignc4_execute_kernel__5x_cublas')
    # on a 4096 x 8192 C: 256 rows x 128 columns a tile make 16 x 64 blocks; 128 x 256 would make 32 x 32
    rows_first = dict(BM=256, BN=128, BK=8, WM=64, WN=64, STAGES=3)
    assert tile_in_our_terms(xmma, (16, 64, 1), 4096, 8192) == rows_first
    assert tile_in_our_terms(xmma, (64, 16, 1), 4096, 8192) == rows_first            # x and y in either order
    assert tile_in_our_terms(xmma, (32, 32, 1), 4096, 8192) == dict(BM=128, BN=256, BK=8, WM=64, WN=64, STAGES=3)
    assert tile_in_our_terms(xmma, (16, 16, 1), 4096, 4096) is None                  # square: both ways fit
    assert tile_in_our_terms(xmma, (65, 16, 1), 4096, 8320) == rows_first            # 16 x 65, not 32 x 33
    assert tile_in_our_terms(xmma, (66, 16, 1), 4096, 8320) is None                  # 32 x 33 swizzled by 2: neither
    square = {'tile': (128, 128, 8), 'warps': (2, 2), 'stages': 4}                  # the same either way round
    assert tile_in_our_terms(square, (32, 65, 1), 4096, 8320) == dict(BM=128, BN=128, BK=8, WM=64, WN=64, STAGES=4)
    assert tile_in_our_terms(xmma, (7, 9, 1), 4096, 8192) is None                    # neither way fits
    skinny = library_kernel_traits('sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma')
    # 1 warp along the 64, 4 along the 128; split-K's pieces in z leave x and y alone
    assert tile_in_our_terms(skinny, (1, 513, 6), 64, 65539) == dict(BM=64, BN=128, BK=8, WM=64, WN=32, STAGES=3)
    assert tile_in_our_terms(library_kernel_traits('cutlass_80_simt_sgemm_128x64_8x5_nn_align1'), (9, 9, 1), 99, 999) is None


def test_the_issue_slots_drawing_stacks_each_kernels_shares_to_100_percent():
    rows = {'ours': issue_shares(2.34, 2.15, 0.82), 'cuBLAS': issue_shares(2.43, 2.15, 0.90)}
    fig = draw_issue_slots(rows)
    patches = {p.get_gid(): (p.get_x(), p.get_width(), p.get_y()) for p in fig.axes[0].patches if p.get_gid()}
    for y, (kernel, shares) in enumerate(rows.items()):
        left = 0
        for share, fraction in shares.items():
            x, width, row = patches[f'{kernel}: {share}']
            assert (x, row) == (pytest.approx(left), y) and width == pytest.approx(100 * fraction)
            left += 100 * fraction
        assert left == pytest.approx(100)
    with pytest.raises(ValueError, match='add up'):
        draw_issue_slots({'wrong': {'FFMA issued': 0.5, 'nothing issued': 0.4}})


def test_ncu_reads_at_the_clock_the_gpu_sets_only_when_asked(monkeypatch):
    import course.profiling as profiling
    seen = []
    class Done:
        stdout = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n"0","k","c","","1"\n'
        stderr = ''
    monkeypatch.setattr(profiling, 'ncu_unavailable', lambda: None)
    monkeypatch.setattr(profiling, 'cuda_tool', lambda name: '/bin/ncu')
    monkeypatch.setattr(profiling.subprocess, 'run', lambda cmd, **kw: seen.append(cmd) or Done())
    for as_found in (False, True):
        assert profiling.ncu_launches('pass', 'k', ['c'], clocks_as_found=as_found) == [('k', {'c': 1.0})]
    assert '--clock-control' not in seen[0]
    assert seen[1][seen[1].index('--clock-control') + 1] == 'none'

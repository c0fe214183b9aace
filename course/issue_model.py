"""A kernel that only multiplies and adds is bound by issue: how many instructions, and how often one issues.

Each of a multiprocessor's 4 schedulers issues at most one warp instruction a cycle. An fp32 product of m x k @ k x n
needs m k n fused multiply-adds, m k n / 32 warp FFMA instructions; at one a cycle on every scheduler that is the
datasheet's fp32 peak. A kernel runs every instruction it has (FFMAs, shared loads, copies, index arithmetic) and a
scheduler issues on only part of the cycles (the others stall: waiting for a shared load, for the instruction cache,
for a barrier...). So

    time = warp instructions / (multiprocessors x 4 x clock x fraction of cycles that issue)

and two kernels that do the same FFMAs differ by two factors: their instruction counts, and how often they issue.
Notebook 17 reads both from ncu for its kernel and cuBLAS's.
"""
import math, re

SCHEDULERS_PER_SM = 4          # warp schedulers per multiprocessor, each issuing at most one instruction a cycle


def _check_fraction(issue_fraction):
    if not 0 < issue_fraction <= 1: raise ValueError(f"issue_fraction is a fraction of cycles, got {issue_fraction}")


def ffma_warp_instructions(m, k, n):
    "The warp FFMA instructions of an m x k @ k x n fp32 product: one multiply-add per (row, column, k), 32 a warp."
    return m * k * n / 32


def issue_bound_ms(warp_instructions, sms, clock_hz, issue_fraction=1.0):
    """Milliseconds to issue `warp_instructions` on `sms` multiprocessors at `clock_hz`, when each scheduler issues on
    `issue_fraction` of the cycles (1: every cycle, the most a kernel can do)."""
    _check_fraction(issue_fraction)
    return warp_instructions / (sms * SCHEDULERS_PER_SM * clock_hz * issue_fraction) * 1e3


def issue_shares(warp_instructions, ffma_instructions, issue_fraction):
    """What a scheduler's cycles hold, as fractions that add up to 1: an FFMA issued, another instruction issued, or
    nothing issued (a stall)."""
    if not 0 < ffma_instructions <= warp_instructions:
        raise ValueError("the FFMAs are some of the instructions: 0 < ffma_instructions <= warp_instructions")
    _check_fraction(issue_fraction)
    ffma = issue_fraction * ffma_instructions / warp_instructions
    return {'FFMA issued': ffma, 'other instruction issued': issue_fraction - ffma, 'nothing issued': 1 - issue_fraction}


def gap_factors(ours, theirs):
    """Why `ours` takes longer than `theirs` (each {'instructions': warp instructions, 'issue': fraction of cycles that
    issue, 'clock': Hz}): the factors time ours / time theirs is made of, multiplied together in 'product'."""
    factors = {'instructions': ours['instructions'] / theirs['instructions'],
               'issue': theirs['issue'] / ours['issue'], 'clock': theirs['clock'] / ours['clock']}
    return {**factors, 'product': math.prod(factors.values())}


def library_kernel_traits(name):
    """What a cuBLAS (xmma or CUTLASS) kernel's name says of it: {'tile': (rows, columns, k) of C and K a block
    takes, 'stages': buffers in shared memory, 'warps': (along rows, along columns), 'math': 'ffma' (CUDA cores),
    'hmma' (tensor cores) or another word, 'arch': the 'smNN' it was written for}; a key is missing where the name
    does not say it."""
    found = {}
    if m := re.search(r'tilesize(\d+)x(\d+)x(\d+)', name): found['tile'] = tuple(int(g) for g in m.groups())
    elif m := re.search(r'_(\d+)x(\d+)_(\d+)x(\d+)_', name): found['tile'] = (int(m[1]), int(m[2]), int(m[3]))
    if m := re.search(r'stage(\d+)', name): found['stages'] = int(m[1])
    elif m := re.search(r'_\d+x\d+_\d+x(\d+)_', name): found['stages'] = int(m[1])
    if m := re.search(r'warpsize(\d+)x(\d+)', name): found['warps'] = (int(m[1]), int(m[2]))
    if m := re.search(r'_(ffma|hmma|imma|gmma|simt)', name): found['math'] = m[1]
    if m := re.search(r'(sm\d+)', name): found['arch'] = m[1]
    return found


def tile_in_our_terms(traits, grid, m, n):
    """A cuBLAS kernel's tile, warps and buffers (`library_kernel_traits` of its name) as they lie on our row-major
    m x n C: {'BM', 'BN' (the tile's rows and columns of C), 'BK', 'WM', 'WN' (a warp's), 'STAGES'}. The name gives the
    tile's two sides, and its warps along each, but not which side runs along our rows: torch hands cuBLAS Cᵀ = Bᵀ Aᵀ
    (cuBLAS thinks in column-major matrices), and cuBLAS may turn it back. The launch's grid (x, y, ...), one block
    per tile in x and y (in either order), says it on a C whose two readings give grids of other shapes (4096 x 8320:
    16 x 65 blocks of 256 x 128, 32 x 33 of 128 x 256, so that not even a grid swizzled by 2 passes for the other).
    None where the name does not say the tile, warps and buffers, or where the grid fits neither way, or both."""
    if not {'tile', 'warps', 'stages'} <= set(traits): return None
    (side, other, bk), (warps_side, warps_other) = traits['tile'], traits['warps']
    blocks = sorted(grid[:2])
    # A set: a square tile with as many warps each way reads the same both ways, which is one reading, not two.
    ways = {(bm, bn, wm, wn) for bm, bn, wm, wn in ((side, other, warps_side, warps_other),
                                                   (other, side, warps_other, warps_side))
            if sorted((-(-m // bm), -(-n // bn))) == blocks}
    if len(ways) != 1: return None                                 # neither reading fits the grid, or two do
    (bm, bn, wm, wn), = ways
    return dict(BM=bm, BN=bn, BK=bk, WM=bm // wm, WN=bn // wn, STAGES=traits['stages'])

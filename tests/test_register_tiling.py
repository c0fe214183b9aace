"""Notebooks 10 and 11: the register-tiled kernels, the autotuner and the Numba twin (10), the every-shape kernel (11), from their `#| export` cells.

On a CPU-only machine (CI) every CUDA C variant is still compiled by nvcc, and the Numba twin runs in
Numba's simulator; on a GPU every variant runs against torch on the course's shapes and bad inputs."""
import re
import pytest
import torch

from conftest import assert_matches_torch, gpu
from course.correctness import bad_matmul_inputs
from utils import LECTURE_AND_AWKWARD_SHAPES, SMALL_AWKWARD_SHAPES, import_notebook, nvcc_available

nb10, nb11 = import_notebook('10'), import_notebook('11')
STEPS = {name: fn for name, fn in nb10.ladder().items() if not name.startswith('07')}
# Shapes that reach every path: edge tiles in M, N and K; widths that are not multiples of 4 (no float4);
# 1 x K and K x 1; and a K that is a multiple of 4 but not of the tile's BK.
SHAPES = LECTURE_AND_AWKWARD_SHAPES + ((129, 68, 260), (257, 1020, 131), (2, 3, 4))
# Every wrapper the GPU tests call: the five steps, the autotuned kernel, the every-shape kernel (model-tuned, split-K
# where the model says) and the Numba twin.
WRAPPERS = {**STEPS, 'autotuned': nb10.matmul_autotuned, 'every shape': nb11.matmul_fp32,
            'Numba twin': nb10.matmul_numba_warptiled}
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")


@needs_nvcc
def test_every_variant_compiles():
    "The five steps and every variant of the autotuner's search space compile (nvcc, also without a GPU)."
    variants = list(STEPS.values()) + nb10.SEARCH_SPACE
    nb10.compile_all(variants)
    assert all(v._module is not None for v in variants)
    assert len(nb10.SEARCH_SPACE) >= 24


@needs_nvcc
def test_every_shape_variant_compiles():
    "Every tile shape of the every-shape kernel compiles, for aligned rows and not (two kernels in each library)."
    nb10.compile_all(nb11.EVERY_SHAPE_SPACE)
    assert len(nb11.EVERY_SHAPE_SPACE) > len(nb10.SEARCH_SPACE) // 2     # every double-buffered tile, and more
    source = nb11.EVERY_SHAPE_SPACE[0].source
    assert 'every_shape<' in source and ', true>' in source and ', false>' in source   # both instantiations


def test_search_space_is_well_formed():
    "Every variant's warps cover its block tile and its lanes cover their sub-tiles (checked again by static_assert)."
    for v in nb10.SEARCH_SPACE:
        p = v.params
        assert v.threads in (128, 256) and p['BM'] % p['WM'] == 0 and p['BN'] % p['WN'] == 0
        assert (p['BM'] * p['BK'] // 4) % v.threads == 0 and (p['BK'] * p['BN'] // 4) % v.threads == 0


def test_min_blocks_follow_threads_and_outputs():
    "64 outputs a thread: 2 blocks of 256 threads or 3 of 128; 128 outputs: 1; a tile may name its own."
    for v in nb11.EVERY_SHAPE_SPACE:
        outputs = v.params['WM'] * v.params['WN'] // 32
        assert v.params['MIN_BLOCKS'] == ({256: 2, 128: 3}[v.threads] if outputs == 64 else 1), repr(v)
    tile = dict(BM=128, BN=64, BK=16, WM=32, WN=64, WMITER=1, TM=8, TN=4)
    assert nb11.every_shape(**tile).params['MIN_BLOCKS'] == 3 and nb11.every_shape(**tile, MIN_BLOCKS=2).params['MIN_BLOCKS'] == 2
    assert '128, 2, 8, false>' in nb11.every_shape(**tile, MIN_BLOCKS=2).source


def test_loads_per_fma_fall_step_by_step():
    "The arithmetic of the notebook: each step needs fewer shared-memory load instructions per FMA."
    per_fma = [nb10.loads_per_fma(nb10.ladder_params(name, fn))[0] for name, fn in nb10.ladder().items()]
    assert per_fma[0] == 2.0 and per_fma[1] == pytest.approx(9 / 8) and per_fma[2] == pytest.approx(16 / 64)
    assert per_fma[3] == pytest.approx(4 / 64) and all(a >= b for a, b in zip(per_fma, per_fma[1:]))


@gpu
@pytest.mark.parametrize('name', WRAPPERS)
@pytest.mark.parametrize('shape', SHAPES, ids=[f'{h}x{k}@{k}x{w}' for h, k, w in SHAPES])
def test_kernels_match_torch(name, shape):
    assert_matches_torch(WRAPPERS[name], *shape)


@gpu
def test_every_search_space_variant_matches_torch():
    "The autotuners may pick any variant: each is right on a shape with edge tiles in M, N and K."
    torch.backends.cuda.matmul.allow_tf32 = False
    for h, k, w in ((300, 68, 260), (129, 3, 5), (257, 1021, 263)):    # the last: unaligned rows, tiles wholly inside
        m, n = torch.randn(h, k, device='cuda'), torch.randn(k, w, device='cuda')
        ref = (m.double() @ n.double()).float()
        for v in nb10.SEARCH_SPACE + nb11.EVERY_SHAPE_SPACE: torch.testing.assert_close(v(m, n), ref, rtol=1e-4, atol=1e-3, msg=repr(v))


@gpu
def test_unaligned_inputs_take_the_checked_path():
    "A view that starts 4 bytes into its storage cannot use float4 loads; the launcher sees it and stays right."
    base = torch.randn(64 * 64 + 1, device='cuda')
    m = base[1:].view(64, 64)
    n = torch.randn(64, 64, device='cuda')
    assert m.data_ptr() % 16 != 0
    torch.testing.assert_close(nb10.step5(m, n), m @ n, rtol=1e-4, atol=1e-3)


@gpu
@pytest.mark.parametrize('name', WRAPPERS)
def test_wrappers_reject_bad_input(name):
    fn = WRAPPERS[name]
    for what, args in bad_matmul_inputs().items():
        with pytest.raises((ValueError, TypeError)) as e: fn(*args)
        assert len(str(e.value).splitlines()[0]) < 200, what
    torch.cuda.synchronize()


@gpu
def test_both_instantiations_fit_the_same_blocks_per_multiprocessor():
    "The unaligned kernel of each every-shape variant runs as many blocks at once as the aligned one (MIN_BLOCKS sees to it)."
    for v in nb11.EVERY_SHAPE_SPACE:
        aligned, unaligned = v.resources(True), v.resources(False)
        assert unaligned['blocks_per_sm'] == aligned['blocks_per_sm'] >= 1, (repr(v), aligned, unaligned)


@gpu
def test_resources_come_from_the_runtime():
    r = nb10.step5.resources()
    assert 32 <= r['registers'] <= 255 and r['blocks_per_sm'] >= 1 and 0 <= r['local_bytes'] < 1024
    assert r['shared_kib'] == pytest.approx(nb10.step5.shared_bytes / 1024)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the simulator runs where there is no GPU")
@pytest.mark.parametrize('shape', SMALL_AWKWARD_SHAPES, ids=[f'{h}x{k}@{k}x{w}' for h, k, w in SMALL_AWKWARD_SHAPES])
def test_numba_twin_in_the_simulator(shape):
    h, k, w = shape
    m, n = torch.randn(h, k), torch.randn(k, w)
    torch.testing.assert_close(nb10.matmul_numba_warptiled(m, n), m @ n, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the simulator runs where there is no GPU")
def test_numba_twin_rejects_bad_input_in_the_simulator():
    good = torch.rand(8, 8)
    for args in ((good.double(), good), (torch.rand(8, 5), good), (torch.rand(0, 8), good), (good.t(), good)):
        with pytest.raises((ValueError, TypeError)): nb10.matmul_numba_warptiled(*args)


# Shapes for split-K: a K of 1 BK step (no split possible), a K that the pieces do not share evenly, unaligned rows
# with tiles wholly inside (the unchecked float-by-float path), and a skinny one.
SPLIT_SHAPES = ((300, 16, 260), (129, 1021, 263), (257, 1020, 131), (33, 4096, 64), (1, 999, 5),
                (777, 1234, 999), (70, 130, 1031),   # rows on 8 bytes (K = 1234); C's width 3 past a multiple of 4
                (130, 77, 260), (1000, 40, 1000))     # ragged edges on aligned rows: the last tiles move inside C
# Tiles of every kind the every-shape kernel comes in: 256 and 128 threads, BK 8 and 16, 64 x 64 to 128 x 256.
SPLIT_TILES = (nb10.WARP_TILE, dict(BM=64, BN=128, BK=8, WM=32, WN=64, WMITER=1, TM=8, TN=4),
               dict(BM=64, BN=64, BK=16, WM=32, WN=32, WMITER=2, TM=4, TN=4),
               dict(BM=128, BN=256, BK=16, WM=64, WN=64, WMITER=1, TM=8, TN=4))


@gpu
@pytest.mark.parametrize('splits', (1, 2, 3, 5, 16))
def test_every_shape_kernel_matches_float64_with_k_in_pieces(splits):
    torch.backends.cuda.matmul.allow_tf32 = False
    for tile in SPLIT_TILES:
        fn = nb11.SplitK(nb11.every_shape(**tile), splits)
        for h, k, w in SPLIT_SHAPES:
            m, n = torch.randn(h, k, device='cuda'), torch.randn(k, w, device='cuda')
            ref = (m.double() @ n.double()).float()
            torch.testing.assert_close(fn(m, n), ref, rtol=1e-4, atol=2e-3, msg=f"{fn} on {h}x{k}x{w}")


@gpu
def test_padded_copies_match_float64_and_keep_aligned_shapes_as_they_are():
    torch.backends.cuda.matmul.allow_tf32 = False
    fn = nb11.Padded(nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), 2))
    for h, k, w in SPLIT_SHAPES + ((64, 64, 64),):
        m, n = torch.randn(h, k, device='cuda'), torch.randn(k, w, device='cuda')
        out = fn(m, n)
        assert out.shape == (h, w) and out.is_contiguous()
        torch.testing.assert_close(out, (m.double() @ n.double()).float(), rtol=1e-4, atol=2e-3, msg=f"{fn} on {h}x{k}x{w}")
    with pytest.raises((ValueError, TypeError)): fn(torch.randn(3, 5, device='cuda'), torch.randn(4, 5, device='cuda'))
    with pytest.raises((ValueError, TypeError)): fn(torch.randn(3, 5, device='cuda').double(), torch.randn(5, 5, device='cuda'))


@gpu
@pytest.mark.parametrize('tile', ['step 5', '128 x 256'])
def test_every_shape_main_loop_touches_no_local_memory(tile):
    "Register spills, if any, stay outside the multiply-adds: both instantiations of step 5's tiles and the 4096³ winner's."
    from course.cuda_toolkit import cuda_tool
    from course.disassembly import cuda_disassembly, kernel_listing
    if not cuda_tool('cuobjdump'): pytest.skip("needs cuobjdump")
    params = nb10.WARP_TILE if tile == 'step 5' else dict(BM=128, BN=256, BK=16, WM=64, WN=64, WMITER=1, TM=8, TN=4)
    disassembly = cuda_disassembly(nb11.every_shape(**params).source)
    assert disassembly[0] == 'SASS'
    for aligned in ('Lb1EE', 'Lb0EE'):                         # the mangled ALIGNED = true and false
        lines = kernel_listing(disassembly, aligned).splitlines()
        assert lines and 'every_shape' in lines[0], aligned
        ffma = [i for i, line in enumerate(lines) if 'FFMA' in line]
        assert len(ffma) >= 1024, lines[0]                     # the unrolled multiply-adds are there
        assert not [line for line in lines[ffma[0]:ffma[-1]] if re.search(r'\b(LDL|STL)', line)], lines[0]


@gpu
@pytest.mark.parametrize('splits', (1, 3))
@pytest.mark.parametrize('w', (1000, 999))
def test_moved_edge_tiles_give_the_bits_of_whole_tiles(splits, w):
    "The last row and column of tiles move back inside C: their outputs have the bits the same product gives on a C of whole tiles."
    import torch.nn.functional as F
    fn = nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), splits)          # 128 x 128 tiles: 1000 = 7 x 128 + 104
    m, n = torch.randn(1000, 300, device='cuda'), torch.randn(300, w, device='cuda')
    whole = fn(F.pad(m, (0, 0, 0, 24)), F.pad(n, (0, 1024 - w)))           # 1024 x 1024: no tile moves
    assert torch.equal(fn(m, n), whole[:1000, :w])


def piece_by_piece(fn, m, n):
    """What a SplitK should return, built without it: the product of each piece of K (cut where the kernel cuts it,
    whole BK steps), each computed with one piece, then added piece 0 first."""
    k, bk = m.shape[1], fn.params['BK']
    steps, pieces = -(-k // bk), fn.pieces(k)
    per_piece = -(-steps // pieces) * bk
    one = nb11.SplitK(fn.variant, 1)
    parts = [one(m[:, a:a + per_piece].contiguous(), n[a:a + per_piece].contiguous()) for a in range(0, k, per_piece)]
    assert len(parts) == pieces
    total = parts[0]
    for part in parts[1:]: total = total + part
    return total


@gpu
@pytest.mark.parametrize('tile', SPLIT_TILES[:3], ids=('128x128', '64x128', '64x64'))
def test_split_k_adds_the_pieces_in_their_order_every_run(tile):
    """The second pass adds the pieces piece 0 first, not in the order the blocks finish (as atomic adds would): the
    bits of the pieces' own products added in that order, on every run."""
    torch.manual_seed(0)
    for splits, (h, k, w) in ((3, (777, 1234, 999)), (8, (256, 2048, 512)), (5, (130, 77, 260)), (2, (1, 999, 5)),
                              (16, (70, 4096, 1031))):
        fn = nb11.SplitK(nb11.every_shape(**tile), splits)
        m, n = torch.randn(h, k, device='cuda'), torch.randn(k, w, device='cuda')
        expected = piece_by_piece(fn, m, n)
        for _ in range(5): assert torch.equal(fn(m, n), expected), f"{fn} on {h}x{k}x{w}"


@gpu
def test_split_k_on_two_streams_at_once():
    "Calls on two streams, which may run at the same time, each get their own product (and workspace)."
    fn = nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), 6)
    pairs = [(torch.randn(256, 4096, device='cuda'), torch.randn(4096, 512, device='cuda')) for _ in range(2)]
    expected = [fn(m, n) for m, n in pairs]
    streams = [torch.cuda.Stream() for _ in pairs]
    for s in streams: s.wait_stream(torch.cuda.current_stream())
    results = [[], []]
    for _ in range(20):
        for i, ((m, n), s) in enumerate(zip(pairs, streams)):
            with torch.cuda.stream(s): results[i].append(fn(m, n))
    torch.cuda.synchronize()
    for i in range(2): assert all(torch.equal(r, expected[i]) for r in results[i])


@gpu
def test_split_k_in_a_cuda_graph():
    "Captured in a CUDA graph (the launches go to the capturing stream) and replayed on new inputs, the product stays right."
    fn = nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), 4)
    m, n = torch.randn(300, 2048, device='cuda'), torch.randn(2048, 500, device='cuda')
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side): fn(m, n)                # warm up off the default stream, as capture asks
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph): out = fn(m, n)
    for _ in range(3):
        m.copy_(torch.randn_like(m)); n.copy_(torch.randn_like(n))
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, fn(m, n))
        torch.testing.assert_close(out, (m.double() @ n.double()).float(), rtol=1e-4, atol=2e-3)


@gpu
def test_split_k_keeps_a_workspace_per_stream_and_only_small_ones(monkeypatch):
    """Calls on one stream share one workspace, grown when a product needs more; one larger than
    WORKSPACE_KEPT_BYTES is allocated for its call and not kept."""
    from course import template_variants
    from course.cuda_library import current_stream_handle
    fn = nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), 4)
    key = (torch.cuda.current_device(), current_stream_handle())
    def run(h, k, w):
        m, n = torch.randn(h, k, device='cuda'), torch.randn(k, w, device='cuda')
        torch.testing.assert_close(fn(m, n), (m.double() @ n.double()).float(), rtol=1e-4, atol=2e-3)
        return template_variants._WORKSPACES.get(key)
    template_variants._WORKSPACES.pop(key, None)
    small = run(256, 2048, 256)
    assert small is not None and small.numel() >= 4 * 256 * 256
    assert run(200, 2048, 250) is small                                     # needs less: the same one
    grown = run(512, 2048, 512)
    assert grown is not small and grown.numel() >= 4 * 512 * 512
    monkeypatch.setattr(template_variants, 'WORKSPACE_KEPT_BYTES', 4 * 512 * 512 * 4 - 1)
    template_variants._WORKSPACES.pop(key)
    assert run(512, 2048, 512) is None                                      # too large to keep


@gpu
def test_matmul_fp32_rejects_bad_inputs_of_a_shape_it_has_tuned():
    "A shape seen before goes straight to its candidate, which must still refuse what check_matmul_inputs refuses."
    h, k, w = 96, 200, 72
    m, n = torch.randn(h, k, device='cuda'), torch.randn(k, w, device='cuda')
    torch.testing.assert_close(nb11.matmul_fp32(m, n), (m.double() @ n.double()).float(), rtol=1e-4, atol=2e-3)
    assert (h, k, w) in nb11.FP32_TUNED
    for bad_m, bad_n in ((m.double(), n), (m.cpu(), n), (m, torch.randn(w, k, device='cuda').t()),
                         (torch.randn(h, k, 3, device='cuda'), n), (m.cpu().numpy(), n), (m, n.half())):
        with pytest.raises((ValueError, TypeError)): nb11.matmul_fp32(bad_m, bad_n)


@gpu
def test_pieces_of_k_are_whole_steps_and_never_empty():
    fn = nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), 16)      # BK = 16
    assert fn.pieces(16) == 1 and fn.pieces(17) == 2 and fn.pieces(40) == 3 and fn.pieces(8192) == 16
    assert nb11.SplitK(nb11.every_shape(**nb10.WARP_TILE), 3).pieces(17 * 16) == 3   # 6 + 6 + 5 steps


@gpu
def test_model_tuned_kernel_is_kept_on_disk(tmp_path):
    "A second look-up of a shape reads the file: the same candidate, without timing again."
    path = tmp_path / 'tuning.json'
    first = nb11.tuned_fp32(300, 1000, 200, path=path, progress=False)
    again = nb11.tuned_fp32(300, 1000, 200, path=path, progress=False)
    assert again is first and path.exists() and first in nb11.FP32_CANDIDATES

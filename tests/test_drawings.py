"""The course's drawings of notebook 10 and the models behind them: which warp and lane compute each output of
the warp-tiled kernel, and the double-buffering timeline of one block. Drawings are checked by what they mark."""
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from course.double_buffering import timeline  # noqa: E402
from course.drawings import EVENT_STYLE, draw_double_buffering, draw_warp_tiles, warp_tile_owner, warp_tile_shape  # noqa: E402

# (BM, BN, WM, WN, WMITER, TM, TN): notebook 10's step 4/5 tile, and variants of its autotuner's search space
TILINGS = [(128, 128, 64, 32, 2, 4, 4), (128, 64, 32, 64, 1, 8, 4), (256, 128, 64, 64, 2, 4, 4),
           (128, 256, 32, 128, 1, 8, 4)]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close('all')


def lane_cells(warp_of, lane_of, warp, lane):
    rows, cols = np.nonzero((warp_of == warp) & (lane_of == lane))
    return set(zip(rows.tolist(), cols.tolist()))


@pytest.mark.parametrize('tiling', TILINGS, ids=str)
def test_every_output_has_one_owner_and_every_lane_the_same_share(tiling):
    BM, BN, WM, WN, WMITER, TM, TN = tiling
    WNITER, *_ = warp_tile_shape(WM, WN, WMITER, TM, TN)
    warp_of, lane_of = warp_tile_owner(*tiling)
    assert warp_of.shape == lane_of.shape == (BM, BN)
    assert (warp_of >= 0).all() and (lane_of >= 0).all()          # no output left out
    pairs, counts = np.unique(warp_of * 32 + lane_of, return_counts=True)
    assert len(pairs) == BM // WM * (BN // WN) * 32                # every lane of every warp computes something
    assert (counts == WMITER * TM * WNITER * TN).all()             # and as much as the others: none overwritten


@pytest.mark.parametrize('tiling', TILINGS, ids=str)
def test_lanes_and_warps_sit_where_the_kernel_puts_them(tiling):
    BM, BN, WM, WN, WMITER, TM, TN = tiling
    WNITER, SUB_M, SUB_N, LANES_N = warp_tile_shape(WM, WN, WMITER, TM, TN)
    warp_of, lane_of = warp_tile_owner(*tiling)
    for warp in (0, BM // WM * (BN // WN) - 1):
        lane0 = lane_cells(warp_of, lane_of, warp, 0)
        shift = lambda cells, dr, dc: {(r + dr, c + dc) for r, c in cells}
        # lanes 0 and 1 own neighbouring TN-wide column groups; lane LANES_N is TM rows below lane 0
        assert lane_cells(warp_of, lane_of, warp, 1) == shift(lane0, 0, TN)
        assert lane_cells(warp_of, lane_of, warp, LANES_N) == shift(lane0, TM, 0)
        # lane 0's outputs: a TM x TN square at the corner of each of the warp's WMITER x WNITER sub-tiles
        row0, col0 = warp // (BN // WN) * WM, warp % (BN // WN) * WN
        assert lane0 == {(row0 + i * SUB_M + r, col0 + j * SUB_N + q) for i in range(WMITER) for r in range(TM)
                         for j in range(WNITER) for q in range(TN)}
        # a warp owns exactly its WM x WN piece
        assert (warp_of[row0:row0 + WM, col0:col0 + WN] == warp).all() and (warp_of == warp).sum() == WM * WN


def test_lane_of_the_default_tiling():
    "Step 4's tiling by hand: lane 0 of warp 0 at rows 0-3 and 32-35, columns 0-3 and 16-19; warp 1 to its right."
    warp_of, lane_of = warp_tile_owner(128, 128, 64, 32, 2, 4, 4)
    assert lane_of[0, 0] == lane_of[35, 19] == 0 and lane_of[0, 4] == 1 and lane_of[0, 12] == 3
    assert lane_of[4, 0] == 4 and lane_of[31, 15] == 31 and lane_of[32, 16] == 0
    assert warp_of[0, 31] == 0 and warp_of[0, 32] == 1 and warp_of[64, 0] == 4 and warp_of[127, 127] == 7


@pytest.mark.parametrize('bad', [(64, 32, 2, 8, 8), (64, 32, 3, 4, 4), (16, 16, 1, 4, 4)])
def test_shapes_the_kernel_rejects_are_rejected(bad):
    with pytest.raises(ValueError):
        warp_tile_shape(*bad)
    with pytest.raises(ValueError):
        warp_tile_owner(100, 128, 64, 32, 2, 4, 4)


def covered_cells(rects):
    return {(int(round(r.get_y())) + dr, int(round(r.get_x())) + dc) for r in rects
            for dr in range(int(round(r.get_height()))) for dc in range(int(round(r.get_width())))}


@pytest.mark.parametrize('tiling, warp, lane', [(TILINGS[0], 0, 0), (TILINGS[0], 6, 13), (TILINGS[1], 1, 9)])
def test_warp_tile_drawing_marks_the_lane_s_outputs(tiling, warp, lane):
    BM, BN, WM, WN, WMITER, TM, TN = tiling
    WNITER, SUB_M, SUB_N, _ = warp_tile_shape(WM, WN, WMITER, TM, TN)
    warp_of, lane_of = warp_tile_owner(*tiling)
    fig = draw_warp_tiles(*tiling, lane=lane, warp=warp)
    block_ax, warp_ax = fig.axes
    by_gid = lambda ax, gid: [p for p in ax.patches if p.get_gid() == gid]
    assert len(by_gid(block_ax, 'warp')) == BM // WM * (BN // WN)
    squares = by_gid(block_ax, 'lane-square')
    assert len(squares) == WMITER * WNITER
    assert covered_cells(squares) == lane_cells(warp_of, lane_of, warp, lane)
    row0, col0 = warp // (BN // WN) * WM, warp % (BN // WN) * WN
    subtiles = by_gid(block_ax, 'subtile')
    assert covered_cells(subtiles) == {(r, c) for r in range(row0, row0 + WM) for c in range(col0, col0 + WN)}
    assert len(subtiles) == WMITER * WNITER and {(s.get_width(), s.get_height()) for s in subtiles} == {(SUB_N, SUB_M)}
    # the enlarged warp: every TM x TN tile carries the number of the lane that computes it
    labels = [t for t in warp_ax.texts if t.get_gid() == 'lane-label']
    assert len(labels) == WM // TM * (WN // TN)
    for text in labels:
        col, row = text.get_position()
        assert int(text.get_text()) == lane_of[row0 + int(row), col0 + int(col)]
    assert f'lane {lane} of warp {warp}' in fig._suptitle.get_text()
    with pytest.raises(ValueError):
        draw_warp_tiles(*tiling, lane=32)


# ---- double buffering ----

def events_of(run, what):
    return {e.tile: e for e in run.events if e.what == what}


@pytest.mark.parametrize('stages', (1, 2))
@pytest.mark.parametrize('load', (0.0, 1.0, 3.0, 9.0))
def test_a_tile_is_multiplied_only_once_it_is_loaded_and_stored(stages, load):
    run = timeline(5, load=load, math=4.0, stages=stages)
    loads, stores, maths = events_of(run, 'load'), events_of(run, 'store'), events_of(run, 'math')
    assert sorted(loads) == sorted(stores) == sorted(maths) == list(range(5))
    for t in range(5):
        assert loads[t].end <= stores[t].start and stores[t].end <= maths[t].start
        if t:   # stored after the math of the tile before (the kernel's order), so no one still reads its buffer
            assert stores[t].start >= maths[t - 1].end
    # the block's threads do one thing at a time; loads in flight are not theirs
    busy = sorted((e.start, e.end) for e in run.events if e.what != 'load')
    assert all(a_end <= b_start + 1e-12 for (_, a_end), (b_start, _) in zip(busy, busy[1:]))
    assert run.total == max(e.end for e in run.events)


def test_two_buffers_overlap_the_next_load_with_this_math():
    one, two = timeline(4, stages=1), timeline(4, stages=2)
    for t, math in events_of(two, 'math').items():
        if t + 1 < 4:
            nxt = events_of(two, 'load')[t + 1]
            assert nxt.start < math.end and math.start < nxt.end
    for load in events_of(one, 'load').values():       # one buffer: no load in flight during any math
        assert all(load.end <= m.start or m.end <= load.start for m in events_of(one, 'math').values())
    assert len([e for e in one.events if e.what == 'barrier']) == 2 * 4
    assert len([e for e in two.events if e.what == 'barrier']) == 4 + 1


@pytest.mark.parametrize('load, math', [(3.0, 4.0), (8.0, 2.0), (0.5, 6.0)])
def test_totals_follow_the_kernel_s_loop(load, math):
    tiles, store, barrier = 6, 0.6, 0.3
    one = timeline(tiles, load, math, stages=1, store=store, barrier=barrier)
    two = timeline(tiles, load, math, stages=2, store=store, barrier=barrier)
    prologue = load + store + barrier
    assert one.total == pytest.approx(prologue + tiles * math + (tiles - 1) * (2 * barrier + load + store) + barrier)
    assert two.total == pytest.approx(prologue + tiles * math + (tiles - 1) * (max(load - math, 0) + store + barrier)
                                      + barrier)
    assert two.total < one.total


def test_without_latency_the_two_differ_only_by_barriers():
    one, two = timeline(5, load=0, stages=1, barrier=0.3), timeline(5, load=0, stages=2, barrier=0.3)
    assert one.total - two.total == pytest.approx(4 * 0.3)
    assert timeline(5, load=0, stages=1, barrier=0).total == timeline(5, load=0, stages=2, barrier=0).total
    with pytest.raises(ValueError):
        timeline(5, stages=3)


def test_double_buffering_drawing_draws_the_model_s_events():
    fig = draw_double_buffering(tiles=3, load=3.0, math=4.0)
    ax = fig.axes[0]
    bars = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    for stages in (1, 2):
        run = timeline(3, load=3.0, math=4.0, stages=stages)
        assert sum(gid.startswith(f'{stages}:') for gid in bars) == len(run.events)
        for index, e in enumerate(run.events):
            bar = bars[f'{stages}:{index}']
            assert bar.get_x() == pytest.approx(e.start) and bar.get_width() == pytest.approx(e.end - e.start)
            assert bar.get_facecolor() == to_rgba(EVENT_STYLE[e.what]['color'])
        total = next(t for t in ax.texts if t.get_gid() == f'total:{stages}')
        assert f'{run.total:.1f}' in total.get_text()
    # loads sit on their own row, apart from the threads' work
    rows = {(stages, e.what): bars[f'{stages}:{i}'].get_y() for stages in (1, 2)
            for i, e in enumerate(timeline(3, load=3.0, math=4.0, stages=stages).events)}
    assert len(set(rows.values())) == 4
    assert rows[2, 'math'] == rows[2, 'store'] == rows[2, 'barrier'] != rows[2, 'load'] != rows[1, 'load']
    assert len(ax.get_legend().get_texts()) == 4


# ---- instruction counts (notebook 07) ----

from course.drawings import draw_opcode_counts  # noqa: E402

# notebook 07's SASS counts on an H100 (sm_90, nvcc 13.0), and made-up ones with more variants and a PTX kind
OPCODE_COUNTS = [
    ({'runtime tw (05)': {'fused multiply-add': 31, 'shared-memory load, 32-bit': 62, 'shared-memory load, 128-bit': 0,
                          'branch': 13, 'integer multiply-add (index arithmetic)': 39},
      'template tw=16 (07)': {'fused multiply-add': 16, 'shared-memory load, 32-bit': 16, 'shared-memory load, 128-bit': 4,
                              'branch': 3, 'integer multiply-add (index arithmetic)': 8}},
     {'fused multiply-add': 'FFMA', 'shared-memory load, 32-bit': 'LDS', 'shared-memory load, 128-bit': 'LDS.128',
      'branch': 'BRA', 'integer multiply-add (index arithmetic)': 'IMAD'}),
    ({'a': {'fma': 7, 'bra': 0}, 'b': {'fma': 70, 'bra': 2}, 'c': {'fma': 1, 'bra': 1}}, {'fma': 'fma.rn.f32'}),
]


@pytest.mark.parametrize('counts, opcodes', OPCODE_COUNTS, ids=['notebook 07', 'three variants'])
def test_opcode_chart_bars_are_the_counts_passed_in(counts, opcodes):
    fig = draw_opcode_counts(counts, opcodes, title='counts')
    ax = fig.axes[0]
    bars = {p.get_gid(): p for p in ax.patches if p.get_gid()}
    expected = {f'{variant}: {kind}': n for variant, per_kind in counts.items() for kind, n in per_kind.items()}
    assert set(bars) == set(expected)
    for gid, n in expected.items():
        assert bars[gid].get_width() == n and bars[gid].get_x() == 0
    labels = {t.get_gid(): t.get_text() for t in ax.texts if t.get_gid()}
    assert labels == {f'count: {gid}': str(n) for gid, n in expected.items()}
    # one group per kind, labelled with the kind and its opcode; a variant's bars share one colour, and no other's
    kinds = list(next(iter(counts.values())))
    assert [t.get_text() for t in ax.get_yticklabels()] == [f'{k}\n{opcodes[k]}' if k in opcodes else k for k in kinds]
    for i, kind in enumerate(kinds):
        ys = [bars[f'{variant}: {kind}'].get_y() for variant in counts]
        assert all(i - 0.5 < y < i + 0.5 for y in ys) and ys == sorted(ys)
    colours = {variant: {bars[f'{variant}: {kind}'].get_facecolor() for kind in kinds} for variant in counts}
    assert all(len(c) == 1 for c in colours.values()) and len({c.pop() for c in colours.values()}) == len(counts)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(counts)


def test_opcode_chart_refuses_variants_that_count_different_kinds():
    with pytest.raises(ValueError):
        draw_opcode_counts({'a': {'fma': 1, 'bra': 2}, 'b': {'fma': 1}})
    with pytest.raises(ValueError):
        draw_opcode_counts({})


def test_a_tile_is_marked_where_it_lies_in_either_layout():
    from course.drawings import draw_stored_tile
    rows, cols, r0, c0, tr, tc = 6, 10, 2, 4, 3, 4
    fig = draw_stored_tile(rows, cols, r0, c0, tr, tc)
    for ax, transposed in zip(fig.axes, (False, True)):
        marked = [p for p in ax.patches if p.get_gid() == 'tile']
        offsets = {t.get_gid(): int(t.get_text()) for t in ax.texts}
        want = {(r, c) for r in range(r0, r0 + tr) for c in range(c0, c0 + tc)}
        # each marked cell is where that element of A lies: x its stored column, y its stored row
        got = {(int(p.get_y()), int(p.get_x())) for p in marked}
        stored = {((c, r) if transposed else (r, c)) for r, c in want}
        assert got == stored and len(marked) == tr * tc
        for r, c in want:                                             # and its offset is the layout's
            assert offsets[f'offset {r},{c}'] == (c * rows + r if transposed else r * cols + c)


@pytest.mark.parametrize('stride_a, stride_b', [(8, 0), (6, 6), (12, 0)])
def test_each_entry_of_a_batch_is_drawn_at_its_stride(stride_a, stride_b):
    from course.drawings import draw_batch_strides
    fig = draw_batch_strides(entries=4, entry_floats=6, stride_a=stride_a, stride_b=stride_b)
    for ax, name, stride in zip(fig.axes, 'AB', (stride_a, stride_b)):
        spans = {p.get_gid(): (p.get_x(), p.get_width()) for p in ax.patches if p.get_gid()}
        assert spans == {f'{name} {i}': (i * stride, 6) for i in range(4)}

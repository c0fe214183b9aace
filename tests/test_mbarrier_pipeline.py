"""The model of Hopper's mbarrier and of a TMA producer/consumer pipeline (course/mbarrier_pipeline.py): phase
parity as the PTX ISA defines it, a pipeline that never lets a consumer read early or a copy overwrite a stage still
read, and the hang or race that a wrong parity or byte count causes."""
import pytest

from course.mbarrier_pipeline import MBarrier, PipelineRace, PipelineStuck, draw_pipeline, simulate


def test_a_phase_completes_when_arrivals_and_bytes_are_all_in():
    b = MBarrier(2, 'b')
    assert b.done(1) and not b.done(0)          # a fresh barrier: parity 1 counts as completed, parity 0 not yet
    b.arrive_expect_tx(100)
    b.arrive()
    assert not b.done(0)                        # both arrivals in, 100 bytes missing
    b.complete_tx(60); assert not b.done(0)
    b.complete_tx(40)
    assert b.done(0) and not b.done(1) and b.parity == 1 and b.pending == 2
    b.complete_tx(10)                           # bytes before the expect_tx of the next phase: allowed
    b.arrive_expect_tx(10); b.arrive()
    assert b.done(1) and b.completed == 2


def test_too_many_arrivals_or_bytes_are_errors():
    b = MBarrier(1, 'b')
    b.arrive_expect_tx(8)
    with pytest.raises(RuntimeError, match='bytes more arrived'): b.complete_tx(16)
    c = MBarrier(1, 'c')
    c.arrive_expect_tx(4)
    with pytest.raises(RuntimeError, match='one arrival too many'): c.arrive()
    with pytest.raises(ValueError): MBarrier(0)


@pytest.mark.parametrize('stages', [1, 2, 3, 4])
@pytest.mark.parametrize('consumers', [1, 2])
def test_the_protocol_orders_copies_and_math(stages, consumers):
    tiles = 9
    run = simulate(tiles, stages=stages, consumers=consumers)
    copies = {e.tile: e for e in run.events if e.what == 'copy'}
    maths = [e for e in run.events if e.what == 'math']
    assert sorted(copies) == list(range(tiles)) and len(maths) == tiles * consumers
    for m in maths: assert m.start >= copies[m.tile].end                       # read after the bytes landed
    for t in range(stages, tiles):                                             # a stage is refilled after all read it
        assert copies[t].start >= max(m.end for m in maths if m.tile == t - stages)


def test_more_stages_hide_the_copy_latency_until_math_bounds_it():
    totals = [simulate(12, stages=s, latency=6, math=4).total for s in (1, 2, 3, 4)]
    assert totals[0] > totals[1] > totals[2] and totals[3] == pytest.approx(totals[2])
    assert totals[2] == pytest.approx(6.5 + 1 + 12 * 4)     # the first tile's latency, then math back to back


def test_a_wrong_byte_count_hangs_or_overflows():
    with pytest.raises(PipelineStuck, match=r'full\[0\].*7232 bytes still to come'):
        simulate(6, tile_bytes=32768, expect_bytes=40000)
    with pytest.raises(RuntimeError, match='bytes more arrived'):
        simulate(6, tile_bytes=32768, expect_bytes=16384)


def test_a_wrong_parity_hangs_or_races():
    with pytest.raises(PipelineStuck, match=r'producer, at tile 0, waits for the phase of parity 0 of empty\[0\]'):
        simulate(6, producer_wait=lambda n: n & 1)                  # waits for a consumer phase nobody has started
    with pytest.raises(PipelineRace, match=r'consumer 0 read stage 0 for tile 0 before its bytes landed'):
        simulate(6, consumer_wait=lambda n: (n & 1) ^ 1)            # the fresh barrier's parity 1 passes at once
    with pytest.raises(PipelineRace, match=r'overwrote stage 0 with tile 2'):
        simulate(6, stages=2, producer_wait=lambda n: 1)            # always parity 1: the second round passes too early


def test_the_drawing_has_a_bar_per_event():
    import matplotlib.pyplot as plt
    run = simulate(5, stages=2, consumers=2)
    fig = draw_pipeline(run)
    gids = {p.get_gid() for ax in fig.axes for p in ax.patches}
    assert {f'{e.who}:{e.what}:{e.tile}' for e in run.events} == gids
    assert 'copy:copy:4' in gids and 'consumer 1:math:0' in gids
    plt.close(fig)


def test_the_drawing_can_rename_rows_and_events_and_share_a_scale():
    import matplotlib.pyplot as plt
    run = simulate(4, stages=2, consumers=1)
    fig = draw_pipeline(run, row_names={'producer': 'threads: issue copies', 'consumer 0': 'threads: mma.sync'},
                        event_labels={'math': 'mma.sync on the stage'}, xmax=2 * run.total)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ['threads: mma.sync', 'TMA (bytes landing)', 'threads: issue copies']
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert 'mma.sync on the stage' in legend and 'consumer: wgmma on the stage' not in legend
    assert ax.get_xlim()[1] == pytest.approx(2 * run.total * 1.02)
    plt.close(fig)
    with pytest.raises(ValueError, match="no event kind"): draw_pipeline(run, event_labels={'mma': 'x'})


def test_a_stored_epilogue_holds_the_consumers_and_an_overlapped_one_does_not():
    plain = simulate(12, stages=4, k_tiles=4, latency=6, math=4)
    stored = simulate(12, stages=4, k_tiles=4, latency=6, math=4, epilogue=6)
    hidden = simulate(12, stages=4, k_tiles=4, latency=6, math=4, epilogue=6, overlap=True, pack=0.5)
    assert stored.total == pytest.approx(plain.total + 3 * 6)            # three tiles of C, each stored in turn
    assert hidden.total == pytest.approx(plain.total + 2 * 0.5 + 6)      # two packs, and the last tile's store
    for run, held in ((stored, 'store'), (hidden, 'pack')):
        for c in ('consumer 0', 'consumer 1'):
            mine = sorted((e for e in run.events if e.who == c and e.what in ('math', held)), key=lambda e: e.start)
            ends = [e for e in mine if e.what == held]
            assert len(ends) == (3 if held == 'store' else 2)
            for e in ends:                                                # the next stage starts only when it ends
                after = [m for m in mine if m.what == 'math' and m.start >= e.start]
                assert not after or after[0].start >= e.end
    stores = [e for e in hidden.events if e.what == 'hidden store' and e.who == 'consumer 0']
    maths = [e for e in hidden.events if e.what == 'math' and e.who == 'consumer 0']
    assert [s.tile for s in stores] == [0, 1]
    for s in stores:                                                      # it runs while the next tile multiplies
        assert any(m.start < s.end and s.start < m.end and m.tile // 4 == s.tile + 1 for m in maths)
    with pytest.raises(ValueError, match='k_tiles'): simulate(10, k_tiles=4, epilogue=1)


def test_the_drawing_shows_hidden_stores_as_thin_bars():
    import matplotlib.pyplot as plt
    fig = draw_pipeline(simulate(8, stages=4, k_tiles=4, epilogue=5, overlap=True))
    bars = {p.get_gid(): p for ax in fig.axes for p in ax.patches}
    assert bars['consumer 0:hidden store:0'].get_height() < bars['consumer 0:math:0'].get_height() / 2
    assert 'consumer 1:store:1' in bars and 'consumer 1:pack:0' in bars
    plt.close(fig)


def test_copies_that_overlap_in_time_share_one_label_and_the_x_label_names_c_only_with_stores():
    import matplotlib.pyplot as plt
    from course.mbarrier_pipeline import tile_labels
    run = simulate(tiles=6, stages=3, consumers=1)              # notebook 12's drawing: copies 0-2 issued back to back
    copies = [e for e in run.events if e.who == 'copy']
    assert [text for _, text, _ in tile_labels(copies, 0.025 * 70)] == ['0-2', '3', '4', '5']
    assert [text for _, text, _ in tile_labels(copies, 0.01)] == ['0', '1', '2', '3', '4', '5']   # room for each
    fig = draw_pipeline(run, xmax=70)
    ax = fig.axes[0]
    texts = sorted((t.get_position()[1], t.get_position()[0]) for t in ax.texts)
    for (y0, x0), (y1, x1) in zip(texts, texts[1:]):
        assert y0 != y1 or x1 - x0 >= 0.025 * 70                  # no two labels of one row on top of each other
    assert 'tile of C' not in ax.get_xlabel()
    plt.close(fig)
    stored = draw_pipeline(simulate(8, stages=4, k_tiles=4, epilogue=5))
    assert 'on a store, its tile of C' in stored.axes[0].get_xlabel()
    plt.close(stored)

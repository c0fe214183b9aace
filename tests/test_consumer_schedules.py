"""The timeline of two consumers sharing the tensor cores (course/consumer_schedules.py): cooperative tiles against
ping-pong turns, and the drawing that shows both."""
import pytest

from course.consumer_schedules import SCHEDULES, busy_share, draw_schedules, schedule


def intervals(run, who, what='math'):
    return sorted((e.start, e.end) for e in run.events if e.who == who and e.what == what)


@pytest.mark.parametrize('name', SCHEDULES)
def test_the_tensor_cores_do_the_same_work_and_never_two_things_at_once(name):
    run = schedule(name, tiles=4, k_stages=5, stage=1.5, pack=0.3, store=2.0)
    busy = intervals(run, 'tensor cores')
    assert sum(b - a for a, b in busy) == pytest.approx(2 * 4 * 5 * 1.5)     # 4 tiles of 128 rows, 5 stages, 2 halves
    assert all(b1 <= a2 + 1e-12 for (_, b1), (a2, _) in zip(busy, busy[1:]))


def test_ping_pong_consumers_take_turns_and_never_overlap_their_own_work():
    run = schedule('ping-pong', tiles=3, k_stages=4)
    assert [e.tile for e in run.events if e.who == 'consumer 0' and e.what == 'math'] == [0, 2, 4]
    assert [e.tile for e in run.events if e.who == 'consumer 1' and e.what == 'math'] == [1, 3, 5]
    for c in (0, 1):
        own = sorted((e.start, e.end) for e in run.events if e.who == f'consumer {c}')
        assert all(b1 <= a2 + 1e-12 for (_, b1), (a2, _) in zip(own, own[1:]))


def test_cooperative_hides_the_stores_but_not_the_pack():
    hidden, held = (schedule('cooperative', tiles=3, k_stages=4, pack=0.5, store=2.0, overlap=o) for o in (True, False))
    assert hidden.total == pytest.approx(3 * 8 + 3 * 0.5 + 2.0)         # only the last tile's store holds it
    assert held.total == pytest.approx(3 * (8 + 0.5 + 2.0))


def test_ping_pong_hides_pack_and_store_while_they_are_shorter_than_a_tile():
    short = schedule('ping-pong', tiles=3, k_stages=4, pack=0.5, store=2.0)
    assert short.total == pytest.approx(6 * 4 + 0.5 + 2.0)             # tensor cores never wait but at the end
    assert busy_share(short) > busy_share(schedule('cooperative', tiles=3, k_stages=4, pack=0.5, store=2.0))
    long = schedule('ping-pong', tiles=3, k_stages=2, pack=0.5, store=4.0)   # a store longer than the other's tile
    assert long.total > 6 * 2 + 4.5 and busy_share(long) < 0.9           # the tensor cores wait for a consumer
    assert any(e.what == 'wait' for e in short.events)                   # where they do not, a consumer waits its turn


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match='schedule must be'): schedule('stream-k')
    with pytest.raises(ValueError, match='at least 1'): schedule('cooperative', tiles=0)
    with pytest.raises(ValueError, match='negative'): schedule('ping-pong', store=-1)


def test_the_drawing_has_a_bar_per_event_of_both_schedules():
    import matplotlib.pyplot as plt
    fig = draw_schedules(tiles=2, k_stages=3)
    gids = {p.get_gid() for ax in fig.axes for p in ax.patches}
    expected = {f'{name}:{e.who}:{e.what}:{e.tile}' for name in SCHEDULES for e in schedule(name, 2, 3).events}
    assert gids == expected
    assert 'ping-pong:consumer 1:math:3' in gids and 'cooperative:consumer 0:hidden store:0' in gids
    plt.close(fig)

"""course.hopper_shapes: the lines that read the shape set's measurements, on made-up times."""
from course import hopper_shapes as hs
from course.timing import TwoTimers, spread


def timed(ms, jitter=0.01):
    return spread([ms * (1 - jitter), ms, ms * (1 + jitter)])


def results(speeds):
    "{shape: ({kernel: TwoTimers}, clocks)} where 'ours' runs at speeds[shape] times the reference's speed."
    return {name: ({'ref': TwoTimers(timed(1.0), timed(1.0)), 'ours': TwoTimers(timed(1 / s), timed(1 / s)),
                    'rival': TwoTimers(timed(1.5), timed(1.5))}, [None, None]) for name, s in speeds.items()}


def test_the_target_lines_say_met_and_missed_with_the_shapes_under_the_goal():
    r = results({'a': 1.2, 'b': 1.1, 'c': 0.9, 'K not a multiple of 8': 1.8})
    interleaved, flushed, rival = hs.target_lines(r, 'ours', 'ref', 'rival')
    assert 'geometric mean 1.209x' in interleaved and 'target at least 1.00x: met' in interleaved
    assert '1.059x without the row lengths TMA cannot copy' in interleaved
    assert 'every shape at least 0.95x: missed on 1 of 4 (c 0.90x)' in interleaved and flushed.startswith('flushed:')
    assert rival == 'rival faster (interleaved verdict) on 0 of 4 shapes'


def test_every_shape_met_and_a_faster_rival_named():
    r = results({'a': 1.0, 'b': 0.96})
    r['b'][0]['rival'] = TwoTimers(timed(0.5), timed(0.5))
    interleaved, _, rival = hs.target_lines(r, 'ours', 'ref', 'rival')
    assert interleaved.endswith('every shape at least 0.95x: met') and rival.endswith('on 1 of 2 shapes: b')


def test_the_speed_table_has_a_row_per_shape_and_both_timers():
    lines = hs.speed_lines(results({'a': 2.0, 'b': 0.5}), 'ref')
    assert len(lines) == 3 and 'ours' in lines[0] and ' 2.00/2.00' in lines[1] and ' 0.50/0.50' in lines[2]


def test_a_target_across_runs_is_judged_with_the_references_spread():
    r = {name: ({'ref': TwoTimers(timed(1.0), timed(1.0)), 'ours': TwoTimers(timed(ms), timed(ms))}, [None, None])
         for name, ms in (('clear', 1.3), ('close', 1.095))}
    again = {'clear': [{'ref': timed(1.0), 'ours': timed(1.3)}], 'close': [{'ref': timed(1.0), 'ours': timed(1.095)}]}
    clear, close = hs.across_runs_lines(r, again, 'ours', 'ref', 1.10, kind='time')
    assert clear.startswith('clear (at most 1.10x its time): 0.77x') and 'missed' in clear
    assert 'too close to call' in close                  # 1.095x its time: inside the reference's spread

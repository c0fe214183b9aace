"""The two-thread timeline of notebook 04's race lab (course.barrier_timeline): without the second barrier a thread
loads the next phase's tiles while the late thread still reads this phase's; with it, never."""
import matplotlib
matplotlib.use('Agg')

from course.barrier_timeline import MULTIPLY, LOAD, draw_race, races, schedule


def test_without_the_second_barrier_the_fast_thread_overwrites_what_the_late_one_reads():
    spans = schedule(second_barrier=False, delay=1.5)
    found = races(spans)
    assert found and all(w.thread == 0 and r.thread == 1 and w.phase == r.phase + 1 for w, r in found)


def test_with_the_second_barrier_no_load_overlaps_a_read_of_the_phase_before():
    for threads, delay in ((2, 1.5), (3, 0.2), (4, 5.0)):
        spans = schedule(second_barrier=True, threads=threads, delay=delay)
        assert races(spans) == []
        # and every thread waits for the late one before loading the next phase
        loads = [s for s in spans if s.what == 'load' and s.phase == 1]
        late_read = max(s.end for s in spans if s.what == 'multiply' and s.phase == 0)
        assert all(s.start >= late_read for s in loads)


def test_no_delay_no_race_even_without_the_second_barrier_in_this_model():
    assert races(schedule(second_barrier=False, delay=0)) == []


def test_a_thread_takes_the_time_its_steps_take():
    spans = schedule(second_barrier=True, threads=2, phases=1, delay=1.5)
    assert max(s.end for s in spans) == LOAD + 1.5 + MULTIPLY


def test_the_drawing_has_two_timelines():
    fig = draw_race()
    assert len(fig.axes) == 2 and [a.get_title(loc='left') for a in fig.axes] == [
        'without the second barrier: a race', 'with the second barrier: no race']

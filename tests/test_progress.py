"""course.progress: a bar where a person watches, none in a saved run (one line at the end of the outermost loop), and
never a bar inside another progress loop."""
import pytest

from course import progress as course_progress
from course.progress import SAVED_RUN, progress


@pytest.fixture
def bars(monkeypatch):
    "The tqdm bars course.progress opens, recorded (their desc) instead of drawn."
    opened = []
    import tqdm.auto
    class Recorder:
        def __init__(self, iterable, desc, unit, total): self.iterable, opened[len(opened):] = iterable, [desc]
        def __enter__(self): return self
        def __exit__(self, *exc): return False
        def __iter__(self): return iter(self.iterable)
    monkeypatch.setattr(tqdm.auto, 'tqdm', Recorder)
    return opened


def test_a_person_watching_sees_one_bar_for_nested_loops(bars, monkeypatch, capsys):
    monkeypatch.delenv(SAVED_RUN, raising=False)
    total = sum(x * y for x in progress(range(3), 'outer') for y in progress(range(4), 'inner'))
    assert total == 3 * 6 and bars == ['outer'] and capsys.readouterr().out == ''


def test_a_saved_run_draws_no_bar_and_prints_one_line(bars, monkeypatch, capsys):
    monkeypatch.setenv(SAVED_RUN, '1')
    items = [y for x in progress(range(3), 'sizes', 'size') for y in progress(range(2), 'rounds', 'round')]
    assert len(items) == 6 and bars == []
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith('sizes: 3 size(s) in ') and out[0].endswith(' s')


def test_show_false_is_silent_everywhere(bars, monkeypatch, capsys):
    for value in ('1', ''):
        monkeypatch.setenv(SAVED_RUN, value)
        assert list(progress('abc', 'letters', show=False)) == ['a', 'b', 'c']
    assert bars == [] and capsys.readouterr().out == ''


def test_a_loop_left_by_an_exception_does_not_leave_later_loops_nested(bars, monkeypatch):
    monkeypatch.delenv(SAVED_RUN, raising=False)
    with pytest.raises(ZeroDivisionError):
        for x in progress(range(3), 'first'): 1 / (x - 1)
    list(progress(range(2), 'second'))
    assert bars == ['first', 'second'] and course_progress._open.depth == 0

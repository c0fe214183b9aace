"""Wrong answers a learner would plausibly write (tests/wrong_answers/): each is rejected by its
exercise's check with a sentence that names the mistake. Where this machine cannot see the mistake (a
race in CUDA C without a GPU, say), the verdict is 'not checked here', never 'passed'."""
import re

import pytest

from conftest import HAS_GPU
from course import exercises
from course.exercises import NOT_CHECKED, NOT_YET, PASSED
from course.exercises.learner_code import solution_work
from wrong_answers import all_wrong_answers, case_id, unusual_right_answers

WRONG = all_wrong_answers()


def test_every_exercise_has_at_least_three_wrong_answers():
    counts = {i: sum(w.exercise == i for w in WRONG) for i in exercises.EXERCISES}
    assert all(n >= 3 for n in counts.values()), {i: n for i, n in counts.items() if n < 3}
    assert all(w.exercise in exercises.EXERCISES for w in WRONG)


@pytest.mark.parametrize('wrong', WRONG, ids=[case_id(w) for w in WRONG])
def test_wrong_answer_is_rejected_with_its_reason(wrong):
    report = exercises.run_check(wrong.exercise, solution_work(wrong.notebook, {wrong.exercise: wrong.cell_body()}))
    assert report.outcome != PASSED, f"a wrong answer passes:\n{report.text()}"
    if not HAS_GPU and wrong.cpu == NOT_CHECKED:
        assert report.outcome == NOT_CHECKED, report.text()
        return
    assert report.outcome == NOT_YET, report.text()
    assert re.search(wrong.pattern(HAS_GPU), report.failure, re.S), \
        f"the sentence does not name the mistake ({wrong.slip}):\n{report.failure}"


RIGHT = unusual_right_answers()


@pytest.mark.parametrize('right', RIGHT, ids=[case_id(w) for w in RIGHT])
def test_unusual_right_answer_is_not_rejected(right):
    report = exercises.run_check(right.exercise, solution_work(right.notebook, {right.exercise: right.cell_body()}))
    assert report.outcome != NOT_YET, report.text()

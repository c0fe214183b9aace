"""Wrong answers a learner would plausibly write, kept as data: each must be rejected by its exercise's
check with a sentence that names the real mistake (or, where this machine cannot detect it, reported as
'not checked here', never 'passed').

A wrong answer is the exercise's reference solution (the solution file's preamble and the exercise's
section) with one change, or a whole cell body of its own. `lesson_NN.py` holds notebook NN's."""
import importlib, re
from dataclasses import dataclass
from pathlib import Path

from course.exercises.learner_code import solution_sections


@dataclass
class Wrong:
    exercise: str            # '04.1'
    slip: str                # the mistake, in a few words (the test's id)
    expect: str              # a regex the 'not yet' sentence must match: it names the real mistake
    change: tuple = None     # (old, new): replace `old` (found exactly once) in the solution's cell body
    body: str = None         # or: the whole cell body (without the `#| exercise` line)
    cpu: str = 'not yet'     # the outcome on a machine without a GPU: 'not yet', or 'not checked here'
    gpu_expect: str = None   # the regex on a GPU machine, where it differs

    @property
    def notebook(self): return self.exercise.split('.')[0]

    def cell_body(self):
        "The learner's cell body for this wrong answer."
        if self.body is not None: return self.body
        preamble, sections = solution_sections(self.notebook)
        text = preamble + sections[self.exercise]
        old, new = self.change
        if text.count(old) != 1:
            raise AssertionError(f"{self.exercise} '{self.slip}': the text to change occurs {text.count(old)} times, not once")
        return text.replace(old, new)

    def pattern(self, gpu): return self.gpu_expect if gpu and self.gpu_expect else self.expect


def solution_with(exercise, *changes):
    "The cell body of the exercise's reference solution with several changes (old, new), each `old` found exactly once."
    preamble, sections = solution_sections(exercise.split('.')[0])
    text = preamble + sections[exercise]
    for old, new in changes:
        if text.count(old) != 1:
            raise AssertionError(f"{exercise}: the text to change {old!r} occurs {text.count(old)} times, not once")
        text = text.replace(old, new)
    return text


def all_wrong_answers():
    "Every recorded wrong answer, in course order, then those found by review."
    out = []
    for path in sorted(Path(__file__).parent.glob('lesson_*.py')) + [Path(__file__).parent / 'found_by_review.py']:
        out += importlib.import_module(f'wrong_answers.{path.stem}').WRONG
    return out


def unusual_right_answers():
    "Right answers written unusually (a lesson's own `RIGHT`, then those found by review): each must not be rejected."
    out = []
    for path in sorted(Path(__file__).parent.glob('lesson_*.py')) + [Path(__file__).parent / 'found_by_review.py']:
        out += getattr(importlib.import_module(f'wrong_answers.{path.stem}'), 'RIGHT', [])
    return out


def case_id(w): return f"{w.exercise}-{re.sub(r'[^a-z0-9]+', '-', w.slip.lower()).strip('-')}"

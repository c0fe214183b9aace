"""The list of exercises: each one's id, title, check and hints. The lesson modules (`lesson_01` ...)
register their exercises here with `@exercise(...)`; nothing here imports them."""
from dataclasses import dataclass


@dataclass
class Exercise:
    id: str              # '04.1': exercise notebook 04, first exercise
    title: str
    check: callable      # check(namespace, report): raises NotYet, or records what passed and what was not checked
    hints: tuple         # two hints, the second more specific than the first
    runs_on_gpu: bool    # where there is a GPU, the learner's code runs on it: the check then runs in a child process

    @property
    def notebook(self): return self.id.split('.')[0]


EXERCISES = {}


def exercise(id, title, hints, runs_on_gpu=False):
    "Register the decorated function as the check of exercise `id`, with its two graded hints."
    if len(hints) != 2: raise ValueError(f"exercise {id} needs two hints, got {len(hints)}")
    def register(check):
        EXERCISES[id] = Exercise(id, title, check, tuple(hints), runs_on_gpu)
        return check
    return register

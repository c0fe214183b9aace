"""What a check concludes about one exercise, and nothing more than was checked.

Three outcomes:
- passed: everything the exercise asks for was checked on this machine, and holds;
- not yet: something is wrong, said in one sentence (`NotYet`);
- not checked here: everything this machine could check holds, but part of the exercise needs what the
  machine lacks (a GPU, nvcc, compute-sanitizer), and the verdict names that part. A CUDA C exercise on a
  CPU-only machine ends here at best: it compiled, nothing ran."""

PASSED, NOT_YET, NOT_CHECKED = 'passed', 'not yet', 'not checked here'
OUTCOMES = (PASSED, NOT_YET, NOT_CHECKED)


class NotYet(Exception):
    "The learner's work does not pass a check yet; the message says what is wrong."


class Report:
    "The lines of one exercise's check: what passed, what failed, what this machine could not check."
    def __init__(self, exercise_id, title, work=None):
        self.exercise_id, self.title, self.work = exercise_id, title, work
        self.passed, self.skipped, self.failure, self.hint_line = [], [], None, ''

    def ok(self, line): self.passed.append(line)

    def skip(self, line):
        "Say what this machine could not check; the outcome is then at best 'not checked here'."
        self.skipped.append(line)

    @property
    def outcome(self):
        if self.failure is not None: return NOT_YET
        return NOT_CHECKED if self.skipped else PASSED

    @property
    def success(self):
        "Nothing is wrong (passed, or not checked here): what the exit code of `make check` follows."
        return self.failure is None

    def text(self):
        lines = [f"Exercise {self.exercise_id} ({self.title}): {self.outcome}"]
        lines += [f"  ok    {l}" for l in self.passed]
        if self.failure: lines.append(f"  FIX   {self.failure}")
        if self.failure and self.hint_line: lines.append(f"  HINT  {self.hint_line}")
        lines += [f"  not checked here: {l}" for l in self.skipped]
        return '\n'.join(lines)

    def as_dict(self):
        return dict(exercise_id=self.exercise_id, title=self.title, passed=self.passed, skipped=self.skipped,
                    failure=self.failure, hint_line=self.hint_line)

    @classmethod
    def from_dict(cls, d, work=None):
        r = cls(d['exercise_id'], d['title'], work)
        r.passed, r.skipped, r.failure, r.hint_line = d['passed'], d['skipped'], d['failure'], d['hint_line']
        return r

    def __repr__(self): return self.text()

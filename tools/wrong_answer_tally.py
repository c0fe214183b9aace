"""Run every recorded wrong answer (tests/wrong_answers/) through its exercise's check and tally, per
exercise, how many were rejected with the sentence that names the mistake, rejected with another sentence,
reported as not checked here, or passed.

    python tools/wrong_answer_tally.py [NN ...]      # only notebooks NN
    python tools/wrong_answer_tally.py -v            # also print each verdict's sentence
"""
import argparse, re, sys, time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / 'tests')]

from course.exercises import NOT_CHECKED, NOT_YET, PASSED, gpu_here, run_check   # noqa: E402
from course.exercises.learner_code import solution_work                          # noqa: E402
from wrong_answers import all_wrong_answers, case_id                             # noqa: E402


def verdict(wrong, gpu):
    "('right sentence' | 'misleading sentence' | 'not checked here' | 'passed', report)."
    report = run_check(wrong.exercise, solution_work(wrong.notebook, {wrong.exercise: wrong.cell_body()}))
    if report.outcome == PASSED: return 'passed', report
    if report.outcome == NOT_CHECKED: return 'not checked here', report
    return ('right sentence' if re.search(wrong.pattern(gpu), report.failure, re.S) else 'misleading sentence'), report


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('notebooks', nargs='*')
    ap.add_argument('-v', action='store_true')
    a = ap.parse_args()
    gpu = gpu_here()
    tally = defaultdict(lambda: defaultdict(int))
    kinds = ('right sentence', 'misleading sentence', 'not checked here', 'passed')
    for w in all_wrong_answers():
        if a.notebooks and w.notebook not in a.notebooks: continue
        t0 = time.time()
        kind, report = verdict(w, gpu)
        tally[w.exercise][kind] += 1
        print(f"{case_id(w)}: {kind} ({time.time() - t0:.1f} s)", flush=True)
        if a.v or kind in ('misleading sentence', 'passed'): print('    ' + (report.failure or report.text()).replace('\n', '\n    '))
    print(f"\n| exercise | {' | '.join(kinds)} |\n| --- |" + ' ---: |' * len(kinds))
    for ex in sorted(tally): print(f"| {ex} | " + ' | '.join(str(tally[ex][k]) for k in kinds) + ' |')
    print(f"| all | " + ' | '.join(str(sum(t[k] for t in tally.values())) for k in kinds) + ' |')


if __name__ == '__main__':
    main()

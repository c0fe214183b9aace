"""The child process of `isolation.check_in_child`: reads {exercise_id, work} as JSON from standard input,
runs that exercise's check on the work here, and prints the report as one JSON line."""
import json, sys

from . import run_check
from .isolation import REPORT_MARK
from .learner_code import Work


def main():
    request = json.loads(sys.stdin.read())
    report = run_check(request['exercise_id'], Work.from_dict(request['work']))
    print(REPORT_MARK + json.dumps(report.as_dict()), flush=True)


if __name__ == '__main__':
    main()

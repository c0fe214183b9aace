"""course.memcheck.sanitize: a script under several compute-sanitizer tools, one line per tool, checked on a CPU with
a stand-in for compute-sanitizer."""
import subprocess
from pathlib import Path

from course import memcheck
from course.memcheck import sanitize

REPORT_WITH_ERRORS = """========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at kernel+0x70 in off_by_one.py:9
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f3a5e000014 is out of bounds
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dbf6f]
=========
========= Invalid __global__ write of size 4 bytes
=========     at kernel+0x90 in off_by_one.py:10
=========
========= ERROR SUMMARY: 2 errors
"""


def fake_sanitizer(reports, seen):
    "A stand-in for run_under_memcheck: tool -> (exit code, report); records (tool, script text, timeout)."
    def run(script, timeout=120, tool='memcheck'):
        seen.append((tool, Path(script).read_text(), timeout))
        code, report = reports[tool]
        return subprocess.CompletedProcess(['compute-sanitizer'], code, stdout=report, stderr='')
    return run


def test_one_line_per_tool_with_its_summary_and_its_invalid_accesses(monkeypatch, tmp_path):
    seen = []
    monkeypatch.setattr(memcheck, 'run_under_memcheck', fake_sanitizer({
        'memcheck': (1, REPORT_WITH_ERRORS),
        'racecheck': (0, "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"),
        'synccheck': (3, "the program crashed before any summary\n")}, seen))
    lines = list(sanitize("print('hi')\n", ('memcheck', 'racecheck', 'synccheck'), tmp_path, timeout=42))
    assert lines == ["memcheck: ERROR SUMMARY: 2 errors; 2 invalid accesses listed; the script exited with status 1",
                     "racecheck: RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings); 0 invalid accesses listed",
                     "synccheck: no summary (exit 3); 0 invalid accesses listed"]
    assert [tool for tool, _, _ in seen] == ['memcheck', 'racecheck', 'synccheck'] and {t for _, _, t in seen} == {42}
    # the script the tools ran: the repository's root on sys.path first, then the code as given
    assert seen[0][1] == f"import sys; sys.path.insert(0, {str(tmp_path)!r})\nprint('hi')\n"


def test_without_compute_sanitizer_one_line_says_so_and_nothing_runs(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(memcheck, 'cuda_tool', lambda name: calls.append(name))      # None: no such tool
    assert list(sanitize("print('hi')\n", ('memcheck', 'racecheck'), tmp_path)) == [
        "compute-sanitizer is not installed here"]
    assert calls == ['compute-sanitizer']


def test_the_script_is_gone_afterwards(monkeypatch, tmp_path):
    seen, paths = [], []
    run = fake_sanitizer({'memcheck': (0, "========= ERROR SUMMARY: 0 errors\n")}, seen)
    monkeypatch.setattr(memcheck, 'run_under_memcheck', lambda script, **kw: (paths.append(Path(script)), run(script, **kw))[1])
    assert list(sanitize("pass\n", ('memcheck',), tmp_path)) == ["memcheck: ERROR SUMMARY: 0 errors; 0 invalid accesses listed"]
    assert paths and not paths[0].exists()


def test_a_script_that_raised_is_not_reported_clean(monkeypatch, tmp_path):
    def run(script, timeout=120, tool='memcheck'):
        return subprocess.CompletedProcess(['compute-sanitizer'], 1, stdout="========= ERROR SUMMARY: 0 errors\n",
                                           stderr="Traceback (most recent call last):\nImportError: no module named x\n")
    monkeypatch.setattr(memcheck, 'run_under_memcheck', run)
    assert list(sanitize("import x\n", ('memcheck',), tmp_path)) == [
        "memcheck: ERROR SUMMARY: 0 errors; 0 invalid accesses listed; the script exited with status 1 "
        "(ImportError: no module named x)"]

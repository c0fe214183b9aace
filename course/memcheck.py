"""compute-sanitizer's memcheck, run on a Python script, and the few lines of its report a reader needs.

memcheck watches every load and store of every kernel and reports each one that falls outside the
memory a program allocated. Its report is long (a host backtrace per error); `memcheck_findings` keeps,
for each invalid access, what it was, where in the source, which thread, and how far outside which
allocation, and the error summary. `sanitize` runs a script under several of compute-sanitizer's tools and says in
one line per tool what each found."""
import re, subprocess, sys, tempfile
from pathlib import Path

from .cuda_toolkit import cuda_tool

REPORT_PREFIX = '========='
# the source position: "at kernel+0x70 in file.py:9", or on a line of its own "in file.py:9", or in older
# versions "at 0xd80 in file.cu:162:kernel(...)"
SOURCE_POSITION = re.compile(r'\bin (\S+?):(\d+)\b')
ACCESS_LINES = ('by thread', 'Address', 'Access to', 'and is')
BACKTRACE_LINES = ('Saved host backtrace', 'Host Frame', 'Device Frame')


def run_under_memcheck(script, timeout=120, tool='memcheck'):
    """Run the Python file `script` under compute-sanitizer's memcheck (or another of its tools: 'racecheck' for
    shared-memory races, 'synccheck' for barriers); return the CompletedProcess (its stdout and stderr as text),
    or None where compute-sanitizer is not installed."""
    sanitizer = cuda_tool('compute-sanitizer')
    if sanitizer is None: return None
    return subprocess.run([sanitizer, '--tool', tool, sys.executable, str(script)],
                          capture_output=True, text=True, timeout=timeout)


def memcheck_findings(report):
    """(errors, summary) from memcheck's output: one list of lines per invalid access (what it was, its
    source file and line where the kernel has line information, the thread, the address and the nearest
    allocation), and the 'ERROR SUMMARY' line (racecheck's 'RACECHECK SUMMARY'; '' if there is none)."""
    errors, summary, current = [], '', None
    for raw in report.splitlines():
        if not raw.startswith(REPORT_PREFIX): continue
        line = raw[len(REPORT_PREFIX):].strip()
        if line.startswith(('ERROR SUMMARY', 'RACECHECK SUMMARY')):
            summary, current = line, None
        elif line.startswith('Invalid '):
            current = [line]
            errors.append(current)
        elif current is None:
            continue
        elif not line or line.startswith(BACKTRACE_LINES):
            current = None                  # the backtrace ends what a reader needs of this error
        elif line.startswith(ACCESS_LINES):
            current.append(line)
        elif (where := SOURCE_POSITION.search(line)):
            current.append(f"in {Path(where[1]).name}, line {where[2]}")
    return errors, summary


def sanitize(script_text, tools, repo_root, timeout=600):
    """Run the Python code `script_text` (written to a temporary file that first puts `repo_root` on sys.path, so it
    can import the course) under each of compute-sanitizer's `tools` ('memcheck', 'racecheck', 'synccheck') in
    turn, and yield one line per tool as it finishes: its summary and how many invalid accesses it listed, and the
    script's exit status where it is not 0 (a script that raised after its first kernel still gets a clean summary).
    Where compute-sanitizer is not installed, a line says so and no tool runs."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / 'sanitized.py'
        script.write_text(f"import sys; sys.path.insert(0, {str(repo_root)!r})\n" + script_text)
        for tool in tools:
            res = run_under_memcheck(script, timeout=timeout, tool=tool)
            if res is None:
                yield "compute-sanitizer is not installed here"
                return
            errors, summary = memcheck_findings(res.stdout + res.stderr)
            # a summary of 0 errors says nothing of a script that stopped early: its exit status is said too
            said = [l for l in res.stderr.splitlines() if l.strip() and not l.startswith(REPORT_PREFIX)]
            failed = (f"; the script exited with status {res.returncode}" + (f" ({said[-1].strip()})" if said else "")
                      if res.returncode and summary else "")
            yield f"{tool}: {summary or 'no summary (exit ' + str(res.returncode) + ')'}; {len(errors)} invalid accesses listed{failed}"

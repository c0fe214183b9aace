"""compute-sanitizer's memcheck, run on a Python script, and the few lines of its report a reader needs.

memcheck watches every load and store of every kernel and reports each one that falls outside the
memory a program allocated. Its report is long (a host backtrace per error); `memcheck_findings` keeps,
for each invalid access, what it was, where in the source, which thread, and how far outside which
allocation, and the error summary."""
import re, subprocess, sys
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

"Short compile errors: only the compiler's error lines, each shown with the line of the learner's source it is about."
import os, re
from pathlib import Path


class CudaCompileError(RuntimeError):
    "A kernel failed to compile; the message holds only the compiler's errors, each with its line."


# nvcc reports `file(line): error: ...`; the host C++ compiler `file:line:col: error: ...`.
_NVCC_ERROR = re.compile(r'([\w./-]+?)\((\d+)\): (error: .*)')
_GCC_ERROR = re.compile(r'([\w./-]+?):(\d+):\d+: (error: .*)')


def compile_errors(log, sources, build_dir=None):
    """Pick the compiler's error lines out of `log` and show each with the line it points at.

    `sources` maps a file name the compiler saw to the text the learner wrote; the line shown comes
    from the file the compiler compiled (in `build_dir`), matched back to the learner's text, so the
    line number is the learner's even when a prelude was added in front. Returns '' if `log` has no
    error lines (the caller then shows the log itself)."""
    out = []
    for fn, line, msg in _NVCC_ERROR.findall(log) + _GCC_ERROR.findall(log):
        base, line = os.path.basename(fn), int(line)
        text = None
        for p in [Path(fn), Path(build_dir or '.') / base]:
            if p.exists():
                lines = p.read_text().splitlines()
                if 0 < line <= len(lines): text = lines[line - 1]
                break
        mine = sources.get(base)
        where = base
        if text is not None and mine is not None:
            own = [i + 1 for i, l in enumerate(mine.splitlines()) if l == text]
            if own: where, line = 'your source', own[0]
        entry = f"{where}, line {line}: {msg.strip()}"
        if text is not None: entry += f"\n    {line:4d} | {text.strip()}"
        if entry not in out: out.append(entry)
    return '\n'.join(out[:10])

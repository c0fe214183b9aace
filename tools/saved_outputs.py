"""What a learner sees of a notebook's saved outputs before running anything, read from the saved file: the things
that look broken in JupyterLab.

- progress bars saved as text: stderr with carriage returns or cursor moves, which JupyterLab shows as a wall of
  half-drawn bars (course.progress draws none in a saved run);
- empty stderr: a bar that cleared itself leaves a pink strip with nothing in it;
- paths of the machine that ran the notebook (a warning's file, a temporary folder);
- lines longer than LONGEST characters, which wrap mid-word;
- text outputs of more than TALLEST lines, which a reader scrolls past.

    python tools/saved_outputs.py [-v] [NN ...]
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONGEST, TALLEST = 150, 60
MACHINE_PATH = re.compile(r'(?<![\w.])/(?:root|home|tmp|opt|usr/local/lib/python|usr/lib/python)\S*')
KINDS = ('bars', 'empty stderr', 'machine paths', 'long lines', 'tall outputs')


def output_text(output):
    if 'text' in output: return ''.join(output['text'])
    return ''.join(output.get('data', {}).get('text/plain', ''))


def problems(path):
    "{kind: [(cell, what)]} of the saved outputs of the notebook at `path`."
    found = {kind: [] for kind in KINDS}
    for i, cell in enumerate(json.loads(Path(path).read_text())['cells']):
        for output in cell.get('outputs', []):
            text = output_text(output)
            if output.get('name') == 'stderr':
                if '\r' in text or '\x1b[' in text: found['bars'].append((i, text.strip()[:60]))
                if not text.strip(): found['empty stderr'].append((i, repr(text[:20])))
            found['machine paths'] += [(i, m.group(0)) for m in MACHINE_PATH.finditer(text)]
            lines = text.splitlines()
            found['long lines'] += [(i, f"{len(line)} characters") for line in lines if len(line) > LONGEST]
            if len(lines) > TALLEST: found['tall outputs'].append((i, f"{len(lines)} lines"))
    return found


def notebooks():
    return sorted((ROOT / 'notebooks').glob('[0-9][0-9]_*.ipynb')) + sorted((ROOT / 'notebooks' / 'exercises').glob('*.ipynb'))


def main(argv):
    verbose, names = '-v' in argv, [a for a in argv if a != '-v']
    for path in notebooks():
        if names and not any(path.name.startswith(n) for n in names): continue
        found = problems(path)
        print(f"{str(path.relative_to(ROOT)):52s}" + '  '.join(f"{kind} {len(found[kind]):3d}" for kind in KINDS))
        if verbose:
            for kind in KINDS:
                for cell, what in found[kind]: print(f"    cell {cell}, {kind}: {what}")


if __name__ == '__main__':
    main(sys.argv[1:])

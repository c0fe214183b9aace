"""Look for repeated code across the notebooks, the course package, utils.py, tests, bench and tools.

    python tools/check_duplicates.py [--min-lines N]

The `duplicates` command reads source files, not notebooks. This writes each notebook's code cells
(cell magics dropped) to NB.py in a temporary folder, copies the Python files beside them (a/b.py as
a__b.py), and runs `duplicates` over the folder. Exits 0 either way: its rows are places to look.
"""
import argparse, json, shutil, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export_code(out):
    "Write every notebook's code cells and every Python file of the course into folder `out`."
    for nb in sorted((ROOT / 'notebooks').glob('*.ipynb')):
        cells = [''.join(c['source']) for c in json.loads(nb.read_text())['cells'] if c['cell_type'] == 'code']
        code = ['\n'.join(l for l in c.splitlines() if not l.startswith('%')) for c in cells]
        (out / f'{nb.stem}.py').write_text('\n\n'.join(code) + '\n')
    for py in [*ROOT.glob('*.py'), *ROOT.glob('*/*.py')]:
        if not {'.venv', 'build', 'scratch'} & set(py.relative_to(ROOT).parts):
            shutil.copy(py, out / str(py.relative_to(ROOT)).replace('/', '__'))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--min-lines', type=int, default=5)
    a = ap.parse_args()
    if not shutil.which('duplicates'):
        print("the `duplicates` command is not installed here: nothing to check"); return 0
    with tempfile.TemporaryDirectory() as tmp:
        export_code(Path(tmp))
        res = subprocess.run(['duplicates', '--repo', tmp, '--min-lines', str(a.min_lines), '--most', '30', '--seconds', '30'],
                             capture_output=True, text=True)
        print(res.stdout + res.stderr, end='')
    return 0


if __name__ == '__main__':
    sys.exit(main())

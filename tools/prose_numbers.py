"""Numbers in the notebooks' prose: how many numeric tokens per 100 words of markdown, and which of them are measured
quantities typed by hand (a number with a unit of time, speed, rate or share: ms, µs, x, %, TFLOP/s, GB/s, ...).

A measured number belongs in a cell's output, printed from the run, where a re-run keeps it true; the markdown says
what to look for. Datasheet figures, arithmetic and targets may stay in prose: `ALLOWED` lists those that carry a
unit (the reviewed constants).

    python tools/prose_numbers.py            # a line per notebook
    python tools/prose_numbers.py -v 12      # and every measured quantity of notebook 13, with its cell
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r'(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])')
# A number followed by a unit that only a measurement gives (a time, a rate, a ratio to another kernel, a share).
# ('128 x 256' is a shape, not a ratio: an x followed by a number does not count.)
MEASURED = re.compile(r'(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*((?:ms|µs|us|ns)\b|s\b|(?:x|×)(?![\w³²])(?!\s*[\dA-Z(])|%|TFLOP/s|GFLOP/s|GB/s|TB/s|GHz|MHz)')
# Reviewed constants with a unit: datasheet figures, the course's targets and rules, arithmetic that explains them.
ALLOWED = {'989 TFLOP/s', '67 TFLOP/s', '3.35 TB/s', '1.10x', '1.25x', '0.60x', '1.00x', '1.03x', '2%', '50%', '100%', '25%',
           '75%'}


def markdown_cells(path):
    nb = json.loads(Path(path).read_text())
    return [(i, ''.join(c['source'])) for i, c in enumerate(nb['cells']) if c['cell_type'] == 'markdown']


def prose_numbers(path):
    """(words, numeric tokens, [(cell, measured quantity)]) of a notebook's markdown, code spans and LaTeX left out."""
    words = numbers = 0
    measured = []
    for i, text in markdown_cells(path):
        text = re.sub(r'`[^`]*`', ' ', text)                  # code spans name things, they do not measure them
        text = re.sub(r'\$[^$]*\$', ' ', text)
        words += len(text.split())
        numbers += len(NUMBER.findall(text))
        measured += [(i, f"{m.group(1)}{' ' if m.group(2)[0].isalpha() and m.group(2) not in ('x',) else ''}{m.group(2)}")
                     for m in MEASURED.finditer(text)]
    return words, numbers, [(i, q) for i, q in measured if q not in ALLOWED]



def per_100_words(words, numbers): return 100 * numbers / max(words, 1)


def main(argv):
    verbose = '-v' in argv
    names = [a for a in argv if a != '-v']
    for path in sorted((ROOT / 'notebooks').glob('[0-9][0-9]_*.ipynb')):
        if names and not any(path.name.startswith(n) for n in names): continue
        words, numbers, measured = prose_numbers(path)
        print(f"{path.stem:28s} {words:6d} words  {per_100_words(words, numbers):4.1f} numbers per 100 words  "
              f"{len(measured):4d} measured quantities in prose")
        if verbose:
            for cell, q in measured: print(f"    cell {cell}: {q}")


if __name__ == '__main__':
    main(sys.argv[1:])

"""Benchmark every kernel of the course against cuBLAS, outside Jupyter.

    python bench/bench.py [--readme] [--quick]

Runs the `#| export` code of notebooks/10_benchmarks.ipynb (the same functions the notebook uses),
prints the table for the lecture's problem, writes the charts to images/, and with --readme puts the
table into README.md between its results markers. Without a GPU it says so in one line and exits 0.
"""
import argparse, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from utils import gpu_available, import_notebook  # noqa: E402


def markdown_table(rows):
    lines = ['| kernel | ms, back to back | TFLOP/s | time / cuBLAS fp32 | ms, one call alone |',
             '| --- | ---: | ---: | ---: | ---: |']
    lines += [f'| {r.name} | {r.ms:.3f} | {r.tflops:.1f} | {r.vs_cublas:.2f} | {r.ms_alone:.3f} |' for r in rows]
    return '\n'.join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--readme', action='store_true', help='write the results table into README.md')
    ap.add_argument('--quick', action='store_true', help='only the lecture problem: no size sweep, no roofline')
    a = ap.parse_args()
    if not gpu_available():
        print("bench.py needs a CUDA GPU, and this machine has none: nothing to measure (see README, 'Results').")
        return 0
    nb = import_notebook('10')
    kernels = nb.all_kernels()
    rows = nb.lecture_benchmark(kernels)
    nb.print_table(rows)
    images = ROOT / 'images'
    nb.bar_chart(rows, images / 'bench_lecture.png')
    if not a.quick:
        rates = nb.size_sweep(kernels)
        nb.sweep_chart(rates, nb.SIZES, images / 'bench_sizes.png')
        nb.roofline_chart(nb.measure_ceilings(), rows, rates, nb.SIZES, images / 'roofline.png')
    if a.readme:
        readme = ROOT / 'README.md'
        text = readme.read_text()
        block = (f"<!-- results:start -->\nMeasured by `python bench/bench.py --readme` on {nb.device_title()}.\n\n"
                 f"{markdown_table(rows)}\n<!-- results:end -->")
        text, count = re.subn(r'<!-- results:start -->.*?<!-- results:end -->', lambda _: block, text, flags=re.S)
        if count != 1: raise SystemExit("README.md has no results markers to replace")
        readme.write_text(text)
        print("README.md results updated")
    return 0


if __name__ == '__main__':
    sys.exit(main())

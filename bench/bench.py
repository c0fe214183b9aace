"""Benchmark every kernel of the course against cuBLAS, outside Jupyter.

    python bench/bench.py [--readme] [--quick]

Runs the `#| export` code of notebooks/11_benchmarks.ipynb (the same functions the notebook uses),
prints the tables for the lecture's problem and for 4096^3 (each with the best course kernel's and
Triton's time over cuBLAS fp32's), writes the charts to images/, and with --readme puts both tables
into README.md between its results markers. Without a GPU it says so in one line and exits 0.
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
    ap.add_argument('--quick', action='store_true', help='only the two tables: no size sweep, no roofline')
    a = ap.parse_args()
    if not gpu_available():
        print("bench.py needs a CUDA GPU, and this machine has none: nothing to measure (see README, 'Results').")
        return 0
    nb = import_notebook('11')
    kernels = nb.all_kernels()
    rows = nb.lecture_benchmark(kernels)
    nb.print_table(rows)
    big_rows = nb.shape_benchmark(kernels, nb.BIG_SHAPE)
    nb.print_table(big_rows)
    images = ROOT / 'images'
    nb.bar_chart(rows, images / 'bench_lecture.png')
    if not a.quick:
        rates = nb.size_sweep(kernels)
        nb.sweep_chart(rates, nb.SIZES, images / 'bench_sizes.png')
        nb.roofline_chart(nb.measure_ceilings(), rows, rates, nb.SIZES, images / 'roofline.png')
    if a.readme:
        readme = ROOT / 'README.md'
        text = readme.read_text()
        (h, k, w), (bh, bk, bw) = nb.LECTURE_SHAPE, nb.BIG_SHAPE
        block = (f"<!-- results:start -->\nMeasured by `python bench/bench.py --readme` on {nb.device_title()}.\n\n"
                 f"**The lecture's problem, {h}x{k} @ {k}x{w}:**\n\n{markdown_table(rows)}\n\n"
                 + ''.join(f"- {line}\n" for line in nb.targets(rows))
                 + f"\n**{bh}x{bk} @ {bk}x{bw}:**\n\n{markdown_table(big_rows)}\n\n"
                 + ''.join(f"- {line}\n" for line in nb.targets(big_rows)) + "<!-- results:end -->")
        text, count = re.subn(r'<!-- results:start -->.*?<!-- results:end -->', lambda _: block, text, flags=re.S)
        if count != 1: raise SystemExit("README.md has no results markers to replace")
        readme.write_text(text)
        print("README.md results updated")
    return 0


if __name__ == '__main__':
    sys.exit(main())

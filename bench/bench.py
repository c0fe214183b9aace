"""Benchmark every kernel of the course against cuBLAS, outside Jupyter.

    python bench/bench.py [--readme] [--quick]

Runs the `#| export` code of notebooks/15_benchmarks.ipynb (the same functions the notebook uses): prints the
tables for the lecture's problem and for 4096^3 (median and middle half of the GPU's time per call over
interleaved rounds, median over cuBLAS fp32's, and the verdict, which says faster or slower only where the
middle halves do not overlap), the lines under each table, and the verdicts of each step of the lecture; then
notebook 12's tensor-core kernels against cuBLAS in the same precision (bf16 on 4096^3 and 8192^3, TF32 on the
lecture's problem) where the GPU has tensor cores, and notebook 13's Hopper steps (bf16, 4096^3 and 8192^3) on a
Hopper GPU.
Without --quick it also times the size sweep and the skinny problems and measures the roofline (ncu where it is
installed). It writes the charts to images/, and with --readme puts both tables into README.md between its
results markers, the tensor-core tables too. Without a GPU it says so in one line and exits 0.
"""
import argparse, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from utils import gpu_available, import_notebook  # noqa: E402
from course.cuda_toolkit import hopper_available, tensor_cores_available  # noqa: E402


def markdown_table(rows):
    "The rows of notebook 15's `table` as a Markdown table."
    lines = ['| kernel | median ms | middle half, ms | TFLOP/s | median / cuBLAS fp32 | vs cuBLAS fp32 |',
             '| --- | ---: | ---: | ---: | ---: | :---: |']
    lines += [f'| {r.name} | {r.ms:.3f} | {r.time.q1:.3f}-{r.time.q3:.3f} | {r.tflops:.1f} | {r.vs_cublas:.2f} | {r.verdict} |'
              for r in rows]
    return '\n'.join(lines)


def tensor_core_markdown(precision, shape, rows, target, title='Tensor cores'):
    "One of notebook 15's tensor-core tables (same-precision comparison) as Markdown, with its target line."
    h, k, w = shape
    lines = [f'**{title}, {precision}, {h}x{k} @ {k}x{w}:**', '',
             f'| kernel | median ms | middle half, ms | TFLOP/s | median / cuBLAS {precision} | vs cuBLAS {precision} |',
             '| --- | ---: | ---: | ---: | ---: | :---: |']
    lines += [f'| {r.name} | {r.ms:.3f} | {r.time.q1:.3f}-{r.time.q3:.3f} | {r.tflops:.1f} | {r.vs_cublas:.2f} | {r.verdict} |' for r in rows]
    return '\n'.join(lines) + f'\n\n- {target}\n'


def shape_set_markdown(nb, results):
    "Notebook 15's fp32 shape-set table as Markdown: each shape's cuBLAS time, and the every-shape kernel and Triton over it."
    lines = ['**fp32 on every shape** (notebook 11\'s every-shape kernel and Triton, each median over cuBLAS fp32\'s):', '',
             '| shape | h x k x w | cuBLAS fp32, ms | every shape / cuBLAS | vs cuBLAS | Triton / cuBLAS |',
             '| --- | --- | ---: | ---: | :---: | ---: |']
    for name, (shape, rows) in results.items():
        by = {r.name: r for r in rows}
        triton = f'{by[nb.TRITON].vs_cublas:.2f}' if nb.TRITON in by else '-'
        lines.append(f"| {name} | {'x'.join(map(str, shape))} | {by[nb.REFERENCE].ms:.3f} | {by[nb.EVERY_SHAPE].vs_cublas:.2f} "
                     f"| {by[nb.EVERY_SHAPE].verdict} | {triton} |")
    return '\n'.join(lines) + '\n\n' + ''.join(f"- {line}\n" for line in nb.shape_set_targets(results))


def readme_block(nb, rows, big_rows, device, tensor_core_tables=(), hopper_tables=(), shape_set=None):
    "The text between README.md's results markers, the tensor-core and Hopper tables too."
    (h, k, w), (bh, bk, bw) = nb.LECTURE_SHAPE, nb.BIG_SHAPE
    bullets = lambda lines: ''.join(f"- {line}\n" for line in lines)
    return (f"<!-- results:start -->\nMeasured by `python bench/bench.py --readme` on {device}. Each kernel's time is "
            f"the median over interleaved rounds of the GPU's time per call; the middle half spans the middle half of "
            f"the rounds; the verdict says faster or slower only where two middle halves do not overlap and the medians "
            f"differ by more than 2%.\n\n"
            f"**The lecture's problem, {h}x{k} @ {k}x{w}:**\n\n{markdown_table(rows)}\n\n" + bullets(nb.targets(rows))
            + f"\n**{bh}x{bk} @ {bk}x{bw}:**\n\n{markdown_table(big_rows)}\n\n" + bullets(nb.targets(big_rows))
            + ('\n' + shape_set_markdown(nb, shape_set) if shape_set else '')
            + ''.join('\n' + tensor_core_markdown(*t) for t in tensor_core_tables)
            + ''.join('\n' + tensor_core_markdown(*t, title='Hopper steps (notebook 13)') for t in hopper_tables)
            + "<!-- results:end -->")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--readme', action='store_true', help='write the results tables into README.md')
    ap.add_argument('--quick', action='store_true', help='only the two tables: no size sweep, skinny problems or roofline')
    a = ap.parse_args()
    if not gpu_available():
        print("bench.py needs a CUDA GPU, and this machine has none: nothing to measure (see README, 'Results').")
        return 0
    nb = import_notebook('15')
    kernels = nb.all_kernels()
    styles = nb.kernel_styles(kernels)
    images = ROOT / 'images'
    rows = nb.lecture_benchmark(kernels)
    nb.print_table(rows)
    big_rows = nb.shape_benchmark(kernels, nb.BIG_SHAPE)
    nb.print_table(big_rows)
    for title, table_rows in [("the lecture's problem", rows), ('4096^3', big_rows)]:
        print(f"\nverdicts, {title}:")
        for line in nb.verdict_summary(table_rows): print("  " + line)
    shape_set = nb.shape_set_rows()
    nb.print_shape_set(shape_set)
    tensor_core_tables = nb.tensor_core_tables() if tensor_cores_available() else []
    hopper_tables = nb.hopper_tables(tensor_core_tables) if hopper_available() else []
    for t in tensor_core_tables + hopper_tables: nb.print_tensor_core_table(*t)
    nb.bar_chart(rows, styles=styles).savefig(images / 'bench_lecture.png', dpi=110)
    if not a.quick:
        sweep = nb.size_sweep(kernels)
        nb.print_sweep(sweep)
        nb.sweep_chart(sweep, styles=styles).savefig(images / 'bench_sizes.png', dpi=110)
        for title, shape in nb.SKINNY_SHAPES.items():
            print(f"\n{title}")
            nb.print_table(nb.shape_benchmark(kernels, shape), shape=shape)
        ceilings = nb.measure_ceilings()
        traffic = {}
        if nb.ncu_unavailable(): print(nb.ncu_unavailable(), "- the roofline has no points")
        else:
            traffic, missing = nb.dram_traffic([r.name for r in rows if r.name != nb.FLOOR])
            for name, why in missing.items(): print(f"{name}: no counters ({why})")
        h, k, w = nb.LECTURE_SHAPE
        nb.roofline_chart(nb.roofs(ceilings), ceilings.bandwidth, nb.roofline_points(rows, traffic),
                          minimum_intensity=nb.minimum_traffic_intensity(h, k, w), styles=styles,
                          bandwidth_source='1 GiB copy, measured',
                          title=f"Roofline: {h}x{k} @ {k}x{w}, each kernel at its measured DRAM traffic\n{nb.device_title()}"
                          ).savefig(images / 'roofline.png', dpi=110)
    if a.readme:
        readme = ROOT / 'README.md'
        block = readme_block(nb, rows, big_rows, nb.device_title(), tensor_core_tables, hopper_tables, shape_set)
        text, count = re.subn(r'<!-- results:start -->.*?<!-- results:end -->', lambda _: block, readme.read_text(), flags=re.S)
        if count != 1: raise SystemExit("README.md has no results markers to replace")
        readme.write_text(text)
        print("README.md results updated")
    return 0


if __name__ == '__main__':
    sys.exit(main())

"""Hardware counters from Nsight Compute (`ncu`), for one kernel launch of a Python snippet.

`ncu` replays the kernel as many times as the counters need and reports them; each caller names the few it
needs (their plain-word names live beside the table that prints them), and we parse the CSV. Where `ncu` is
not installed (or cannot read the counters) `ncu_unavailable()` says so in one line. `profile_each` reads the same
counters for several kernels of a notebook, one fresh process each (`notebook_launch` writes each one's snippet),
and `print_counters` prints them as a table. `cuda_profile` is torch's profiler, quieter; `kernel_grids` reads the
kernels it saw with their grids, and `launched_kernels` those a call launches.
"""
import contextlib, csv, io, subprocess, sys

from .cuda_toolkit import cuda_tool


def ncu_unavailable():
    "None when ncu is here; otherwise one line saying why there are no counters."
    return None if cuda_tool('ncu') else "Nsight Compute (ncu) is not installed here, so no counters were read"


def ncu_launches(snippet, kernel_regex, counters, cwd=None, timeout=600, clocks_as_found=False):
    """Run `python -c snippet` under ncu and return [(kernel name, {counter: value})], one entry per launch of a
    kernel whose name matches `kernel_regex`, in launch order. ncu holds the GPU at its base clock while it reads,
    so that counts of cycles repeat from run to run; `clocks_as_found` leaves the clock as the GPU sets it, as the
    timings outside ncu find it. Raises RuntimeError with ncu's own words when it reads nothing."""
    if ncu_unavailable(): raise RuntimeError(ncu_unavailable())
    cmd = [cuda_tool('ncu'), '--csv', '--print-units', 'base', *(['--clock-control', 'none'] if clocks_as_found else []),
           '--metrics', ','.join(counters),
           '--kernel-name', f'regex:{kernel_regex}', sys.executable, '-c', snippet]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    rows = list(csv.DictReader(io.StringIO('\n'.join(l for l in res.stdout.splitlines() if l.startswith('"')))))
    if not rows:
        said = [l for l in (res.stdout + res.stderr).splitlines() if 'ERR' in l or 'rror' in l]
        raise RuntimeError(f"ncu read no counters: {(said or ['(no message)'])[-1].strip()}")
    launches = {}                                   # ID -> (name, values), in the order ncu listed them
    for r in rows:
        name, values = launches.setdefault(r['ID'], (r.get('Kernel Name', ''), {}))
        value = r['Metric Value'].replace(',', '')
        values[r['Metric Name']] = float(value) if value not in ('', 'n/a') else float('nan')
    return list(launches.values())


def ncu_counters(snippet, kernel_regex, counters, cwd=None, timeout=600):
    """{counter: value} for the last launch of a kernel whose name matches `kernel_regex` in `python -c snippet`,
    from ncu. Raises RuntimeError with ncu's own words when it fails."""
    return ncu_launches(snippet, kernel_regex, counters, cwd, timeout)[-1][1]


def notebook_launch(notebook, kernel, shape, precision):
    """A snippet for `python -c`: import notebook `notebook` (as 'nb'), make random `precision` inputs of `shape`
    (h, k, w), call `nb.<kernel>` (an expression such as "tensor_core('mma', 'bf16')") on them once, and wait for
    the GPU. Run from the repository's root."""
    return (f"import torch; from utils import import_notebook; nb = import_notebook({notebook!r}); "
            f"from course.reduced_precision import random_inputs; m, n = random_inputs(*{tuple(shape)}, {precision!r}); "
            f"nb.{kernel}(m, n); torch.cuda.synchronize()")


def profile_each(snippets, kernel_regex, counters, cwd=None, timeout=600):
    """{key: {counter: value}} for each snippet of `snippets` ({key: snippet}), each run under ncu in a process of
    its own: the counters of the last launch of the kernel `kernel_regex` names (a regex, or a function of the key
    that returns one)."""
    return {key: ncu_counters(snippet, kernel_regex(key) if callable(kernel_regex) else kernel_regex, counters,
                              cwd=cwd, timeout=timeout)
            for key, snippet in snippets.items()}


def print_counters(profiles, row_names, counters, name_width, column_width, number_format='.2f', by_counter=False):
    """Print `profiles` ({key: {counter: value}}, as `profile_each` returns them) as a table: a row per key, named
    `row_names[key]` in a column `name_width` wide, and a column per entry of `counters` ({title: counter}),
    `column_width` wide, each value in `number_format`: one format for all, or a function of a counter's title that
    returns its format (counts as whole numbers, ratios with decimals). `by_counter`: the table turned, a row per
    counter (its title in the `name_width` column) and a column per key, for many counters of few kernels."""
    fmt = number_format if callable(number_format) else lambda title: number_format
    if by_counter:
        print(f"  {'counter':{name_width}s}" + ''.join(f"{row_names[key]:>{column_width}s}" for key in profiles))
        for title, counter in counters.items():
            print(f"  {title:{name_width}s}" + ''.join(f"{values[counter]:{column_width}{fmt(title)}}" for values in profiles.values()))
        return
    print(f"  {'step':{name_width}s}" + ''.join(f"{title:>{column_width}s}" for title in counters))
    for key, values in profiles.items():
        print(f"  {row_names[key]:{name_width}s}" +
              ''.join(f"{values[counter]:{column_width}{fmt(title)}}" for title, counter in counters.items()))


@contextlib.contextmanager
def cuda_profile():
    """torch's profiler of CUDA activity (`with cuda_profile() as prof:`), without its warning that it clears events at
    the end of each cycle: a single cycle is profiled here, and Jupyter would save the warning with the path of torch's
    own file on the machine that ran it."""
    import warnings
    from torch.profiler import ProfilerActivity, profile
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='.*Profiler clears events')
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            yield prof


def kernel_grids(prof):
    """[(kernel name, grid (x, y, z))] of the kernels a `cuda_profile` saw, in launch order: read from its Chrome trace,
    which keeps each launch's grid (the profiler's events do not)."""
    import json, os, tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'trace.json')
        prof.export_chrome_trace(path)
        with open(path) as f: events = json.load(f).get('traceEvents', [])
    kernels = sorted((e for e in events if e.get('cat') == 'kernel' and 'grid' in e.get('args', {})),
                     key=lambda e: e.get('ts', 0))
    return [(e['name'], tuple(e['args']['grid'])) for e in kernels]


def launched_kernels(call):
    """[(kernel name, grid (x, y, z))] of the kernels `call()` launches, in launch order: its second call profiled (the
    first compiles, tunes and allocates), each name without 'void' or its argument list."""
    import torch
    call(); torch.cuda.synchronize()
    with cuda_profile() as prof:
        call(); torch.cuda.synchronize()
    return [(name.removeprefix('void ').split('(')[0], grid) for name, grid in kernel_grids(prof)]

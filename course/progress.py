"""Progress bars that help a learner watching a long cell and leave a saved notebook clean.

While a person runs a cell, a bar (tqdm) shows how far a long loop is. A notebook executed to be saved
(`tools/run_notebooks.py`, and the tests, set `COURSE_SAVED_RUN=1`) draws no bar, since a bar redrawn with carriage
returns is saved as a wall of half-drawn lines, and one cleared at its end as an empty strip of stderr; the outermost
loop prints one line instead, once it is done: what was done, and in how long. A loop inside another's never draws a
bar of its own: nested bars move the cursor up, which JupyterLab does not do, and their lines pile up.
"""
import os, threading, time, warnings

SAVED_RUN = 'COURSE_SAVED_RUN'
_open = threading.local()          # .depth: how many progress loops this thread is inside


def saved_run():
    "True where the notebook is being executed to be saved (no person watching it)."
    return os.environ.get(SAVED_RUN, '') not in ('', '0')


def progress(iterable, desc, unit='item', total=None, show=True):
    """Iterate over `iterable`, with a bar named `desc` counting `unit`s where a person watches (`show`, and not a
    saved run, and not inside another progress loop), else with no bar; a saved run's outermost loop prints one line
    at its end: '<desc>: <count> <unit>(s) in <seconds> s'."""
    depth = getattr(_open, 'depth', 0)
    _open.depth = depth + 1
    start, count = time.perf_counter(), 0
    try:
        if show and depth == 0 and not saved_run():
            from tqdm.std import TqdmWarning
            with warnings.catch_warnings():
                # In Jupyter without ipywidgets, tqdm.auto warns once and falls back to a text bar: the text bar is enough.
                warnings.simplefilter('ignore', TqdmWarning)
                from tqdm.auto import tqdm
                bar = tqdm(iterable, desc=desc, unit=unit, total=total)
            with bar:
                for item in bar:
                    count += 1
                    yield item
        else:
            for item in iterable:
                count += 1
                yield item
    finally:
        _open.depth = depth
    if show and depth == 0 and saved_run():
        print(f"{desc}: {count} {unit}(s) in {time.perf_counter() - start:.0f} s")

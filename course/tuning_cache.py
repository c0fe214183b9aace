"""Autotuning results kept on disk, so that a later Python session pays nothing for a shape it has tuned before.

A result is the winning variant's parameters for one key: the GPU (its name and compute capability), the code (a
hash of every variant's source, so that any change to a kernel or to the search space makes a new key), the shape
and the dtype. The results live in one JSON file (`cache_dir()/tuning.json` unless said), rewritten whole through
a temporary file, so that an interrupted write leaves the old file; a file that cannot be read counts as empty.
`tuned` is the one call a wrapper needs: the winner from the file, or from `autotune` (then written to the file).
"""
import hashlib, json, os, tempfile, time
from pathlib import Path


def default_path():
    from .cuda_toolkit import cache_dir
    return cache_dir() / 'tuning.json'


def gpu_identity():
    "The GPU's name and compute capability, e.g. 'NVIDIA H100 80GB HBM3 (9.0)'."
    import torch
    major, minor = torch.cuda.get_device_capability()
    return f"{torch.cuda.get_device_name()} ({major}.{minor})"


def code_version(variants):
    "A hash of every variant's source, in no particular order: the same search space of the same code, the same hash."
    digest = hashlib.sha256()
    for source in sorted(v.source for v in variants): digest.update(source.encode())
    return digest.hexdigest()[:16]


def tuning_key(variants, h, k, w, dtype, gpu):
    return f"{gpu} | code {code_version(variants)} | {h}x{k}x{w} | {dtype}"


def _read(path):
    try: return json.loads(Path(path).read_text())
    except (OSError, ValueError): return {}


def _write(path, results):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile('w', dir=path.parent, delete=False, suffix='.tmp') as f:
        json.dump(results, f, indent=1, sort_keys=True)
    os.replace(f.name, path)


def load_winner(variants, h, k, w, dtype, gpu, path=None):
    "The variant of `variants` that won for this key before, or None (never tuned, or the file lost it)."
    params = _read(path or default_path()).get(tuning_key(variants, h, k, w, dtype, gpu))
    return next((v for v in variants if v.params == params), None) if params is not None else None


def save_winner(variants, winner, h, k, w, dtype, gpu, path=None):
    "Record `winner` (one of `variants`) for this key, keeping every other key's result."
    path = path or default_path()
    results = _read(path)
    results[tuning_key(variants, h, k, w, dtype, gpu)] = winner.params
    _write(path, results)


def _remembered_key(what, variants, gpu):
    return f"{gpu} | code {code_version(variants)} | {what}"


def remembered(what, variants, compute, path=None, gpu=None):
    """A JSON-able result about `variants` on this GPU (e.g. a model's calibration), named `what`: read from the file
    when this GPU computed it for this code before, else `compute()`d and written to the file, with the seconds
    `compute()` took beside it (`remembered_seconds` reads them)."""
    path, gpu = path or default_path(), gpu or gpu_identity()
    key = _remembered_key(what, variants, gpu)
    results = _read(path)
    if key in results: return results[key]
    start = time.perf_counter()
    value = compute()
    results[key], results[key + ' | seconds'] = value, time.perf_counter() - start
    _write(path, results)
    return json.loads(json.dumps(value))        # as a later session will read it back


def remembered_seconds(what, variants, path=None, gpu=None):
    "How many seconds computing the result `remembered` keeps under these names took; None if it kept no time."
    gpu = gpu or gpu_identity()
    return _read(path or default_path()).get(_remembered_key(what, variants, gpu) + ' | seconds')


def tuned(variants, h, k, w, dtype='float32', path=None, gpu=None, tune=None, progress=True):
    """The fastest of `variants` for h x k @ k x w: read from the file when this GPU tuned this code for this shape
    before, else found by `tune` (default: `course.autotune.autotune`, which returns trials fastest first) and
    written to the file."""
    variants = list(variants)
    gpu = gpu or gpu_identity()
    known = load_winner(variants, h, k, w, dtype, gpu, path)
    if known is not None: return known
    if tune is None:
        from .autotune import autotune as tune
    winner = tune(variants, h, k, w, progress=progress, dtype=dtype)[0].variant
    save_winner(variants, winner, h, k, w, dtype, gpu, path)
    return winner

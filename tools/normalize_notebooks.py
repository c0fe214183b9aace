"""Give every notebook the top-level metadata that JupyterLab (from .venv) writes when it saves it, so that opening
a notebook does not mark it modified and autosave does not rewrite a tracked file.

    python tools/normalize_notebooks.py [--check] [NOTEBOOK ...]

When JupyterLab opens a notebook it starts the kernel named in its kernelspec and, once the kernel answers, writes
into the notebook's metadata
- `kernelspec`: that kernel's name, display_name and language (from its kernel.json: "Python 3 (ipykernel)");
- `language_info`: the kernel's kernel_info reply as is, the Python version included ("3.11.7" for .venv here);
and it saves `nbformat_minor` as the file has it (5 here: nbformat 4.5 is the one with cell ids, which our notebooks
carry). If kernelspec or language_info differs from the file, the notebook is marked modified at once and autosave
writes it back two minutes later. (Measured with JupyterLab 4.6 in headless Chromium: a notebook whose metadata is
exactly this opens unmodified; a different Python version alone, a display_name "Python 3", a missing `language` in
kernelspec, or a missing language_info marks it modified.)

This tool asks the kernel itself (started the way JupyterLab starts it, with the .venv's Python) and writes those
values, keys sorted as the server saves them; other metadata keys and every cell stay byte for byte as they are.
Idempotent. --check changes nothing: it lists the notebooks that differ and exits 1 if there are any.
The Python version is the .venv's: after notebooks are executed elsewhere (tools/run_notebooks.py on a GPU machine
records that machine's Python), run this tool again here.
"""
import json, os, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PYTHON = ROOT / '.venv' / 'bin' / 'python'
NBFORMAT_MINOR = 5   # the nbformat with cell ids; JupyterLab keeps a file's minor version when it is 4 or more


def notebooks():
    "Every notebook of the course (the list tools/saved_outputs.py reads too)."
    sys.path.insert(0, str(ROOT / 'tools'))
    from saved_outputs import notebooks as listed
    return listed()


def serialize(nb):
    "The text the Jupyter server writes (nbformat.write: indent 1, no ASCII escapes, a final newline), in nb's key order."
    return json.dumps(nb, indent=1, ensure_ascii=False) + '\n'


def kernel_metadata(kernel_name='python3'):
    """{'kernelspec': ..., 'language_info': ...} as JupyterLab writes them for kernel `kernel_name`: the kernel spec
    JupyterLab finds (the user's own kernel folders left out, so the result describes the .venv, not a home folder)
    and the language_info of a kernel started and asked."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import start_new_kernel
    with tempfile.TemporaryDirectory() as empty:
        old = {k: os.environ.get(k) for k in ('JUPYTER_DATA_DIR', 'JUPYTER_PATH')}
        os.environ['JUPYTER_DATA_DIR'] = empty
        os.environ.pop('JUPYTER_PATH', None)
        try:
            spec = KernelSpecManager().get_kernel_spec(kernel_name)
            km, kc = start_new_kernel(kernel_name=kernel_name, stderr=subprocess.DEVNULL)
            try:
                info = kc.kernel_info(reply=True, timeout=60)['content']['language_info']
            finally:
                kc.stop_channels()
                km.shutdown_kernel(now=True)
        finally:
            for k, v in old.items():
                if v is None: os.environ.pop(k, None)
                else: os.environ[k] = v
    sort = lambda d: {k: sort(d[k]) if isinstance(d[k], dict) else d[k] for k in sorted(d)}
    return {'kernelspec': sort({'display_name': spec.display_name, 'language': spec.language, 'name': kernel_name}),
            'language_info': sort(info)}


def normalized(nb, expected):
    "A copy of notebook `nb` (parsed JSON) with the top-level metadata JupyterLab writes; cells are the same objects."
    metadata = {**nb.get('metadata', {}), **expected}
    out = {k: v for k, v in nb.items() if k not in ('metadata', 'nbformat', 'nbformat_minor')}
    out['metadata'] = {k: metadata[k] for k in sorted(metadata)}
    out['nbformat'] = 4
    out['nbformat_minor'] = max(nb.get('nbformat_minor', 0), NBFORMAT_MINOR)
    return out


def differences(old, new):
    "Which top-level fields differ, as short strings (kernelspec.display_name, language_info.version, ...)."
    found = []
    for key in sorted(set(old['metadata']) | set(new['metadata'])):
        a, b = old['metadata'].get(key), new['metadata'].get(key)
        if a == b: continue
        if isinstance(a, dict) and isinstance(b, dict):
            found += [f"{key}.{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        else:
            found.append(f"{key}: {'missing' if a is None else 'present'} -> {'missing' if b is None else 'set'}")
    if old.get('nbformat_minor') != new['nbformat_minor']: found.append(f"nbformat_minor: {old.get('nbformat_minor')} -> {new['nbformat_minor']}")
    if list(old['metadata']) != list(new['metadata']) and not found: found.append("metadata keys not sorted")
    return found


_asked = {}   # kernel name -> its metadata, asked once per run


def expected_metadata(kernel_name='python3'):
    if kernel_name not in _asked: _asked[kernel_name] = kernel_metadata(kernel_name)
    return _asked[kernel_name]


def normalize(path, check=False):
    """Normalize one notebook (or, with check, only compare); return the list of differences found, [] if none.
    Raises ValueError for a file the tool would have to reformat beyond its metadata."""
    text = Path(path).read_text(encoding='utf-8')
    nb = json.loads(text)
    new = normalized(nb, expected_metadata(nb.get('metadata', {}).get('kernelspec', {}).get('name', 'python3')))
    new_text = serialize(new)
    if new_text == text: return []
    found = differences(nb, new) or ["top-level layout"]
    if check: return found
    if serialize(nb) != text:
        raise ValueError(f"{path}: not laid out as the Jupyter server writes notebooks (indent 1, a final newline); "
                         "rewriting its metadata would reformat its cells, so it is left as it is")
    fd, tmp = tempfile.mkstemp(dir=Path(path).parent, prefix='.normalize-', suffix='.ipynb')
    with os.fdopen(fd, 'w', encoding='utf-8') as f: f.write(new_text)
    os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    os.replace(tmp, path)
    return found


def main(argv):
    check = '--check' in argv
    paths = [Path(a).resolve() for a in argv if a != '--check'] or notebooks()
    changed, failed = [], []
    for path in paths:
        try:
            found = normalize(path, check)
        except ValueError as e:
            failed.append(str(e)); continue
        if found: changed.append((path, found))
    for path, found in changed:
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{where}: {'differs' if check else 'normalized'}: {'; '.join(found)}")
    for message in failed: print(message, file=sys.stderr)
    if not changed and not failed: print(f"{len(paths)} notebooks: metadata as JupyterLab writes it")
    return 1 if failed or (check and changed) else 0


if __name__ == '__main__':
    # The metadata is what the .venv's JupyterLab writes: run in the .venv's Python whatever python started this.
    if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / '.venv').resolve():
        os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), __file__, *sys.argv[1:]])
    sys.exit(main(sys.argv[1:]))

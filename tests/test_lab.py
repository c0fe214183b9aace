"""`make lab` opens the course: the JupyterLab server starts with the Makefile's own command line, as root
too (CI runs as root), and serves the notebooks. The test lists them through the server's REST API."""
import json, os, shlex, socket, subprocess, time, urllib.request

import pytest

from conftest import ROOT

NOTEBOOKS = sorted(p.name for p in (ROOT / 'notebooks').glob('[0-9]*.ipynb'))


def lab_command():
    res = subprocess.run(['make', '-s', 'lab-command'], cwd=ROOT, capture_output=True, text=True, check=True)
    return shlex.split(res.stdout.strip())


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not (ROOT / '.venv' / 'bin' / 'jupyter').exists(), reason="needs the .venv that `make lab` sets up")
def test_make_lab_serves_the_notebooks(tmp_path):
    cmd = lab_command()
    if os.geteuid() == 0: assert '--allow-root' in cmd   # without it Jupyter refuses to start as root
    port, token = free_port(), 'course-test-token'
    env = {**os.environ, 'JUPYTER_RUNTIME_DIR': str(tmp_path), 'JUPYTER_CONFIG_DIR': str(tmp_path / 'config')}
    server = subprocess.Popen(cmd + [f'--port={port}', '--ip=127.0.0.1', '--no-browser', f'--IdentityProvider.token={token}'],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f'http://127.0.0.1:{port}/api/contents?token={token}'   # `jupyter lab notebooks/` serves notebooks/ as its root
        deadline, listing = time.time() + 90, None
        while time.time() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=5) as r: listing = json.load(r)
                break
            except OSError:
                time.sleep(1)
        assert server.poll() is None, f"the server stopped:\n{server.stdout.read()[-2000:]}"
        assert listing is not None, "the server did not answer within 90 s"
        served = sorted(item['name'] for item in listing['content'] if item['name'].endswith('.ipynb'))
        assert served == NOTEBOOKS
    finally:
        server.terminate()
        try: server.wait(timeout=20)
        except subprocess.TimeoutExpired: server.kill()

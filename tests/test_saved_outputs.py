"""What a learner sees in JupyterLab before running anything: the saved outputs hold no progress bars drawn as text,
no empty stderr strips, no paths of the machine that ran them, no lines that wrap mid-word and no walls of output.
Notebooks saved before course.progress existed may not get worse than they are (their counts are ceilings, to be
brought to 0 at their next run on a GPU)."""
import json

import pytest

from conftest import load_script

saved = load_script('tools/saved_outputs.py', 'saved_outputs')
# (bars, empty stderr, machine paths, long lines, tall outputs) allowed today where not all 0.
CEILINGS = {'05_cuda_dynamic_shared': (0, 0, 0, 1, 0), '07_cuda_templates': (0, 0, 0, 0, 1), '15_benchmarks': (0, 0, 0, 0, 1)}
NOTEBOOKS = saved.notebooks()


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[str(p.relative_to(saved.ROOT / 'notebooks')) for p in NOTEBOOKS])
def test_saved_outputs_look_clean(path):
    found = saved.problems(path)
    allowed = dict(zip(saved.KINDS, CEILINGS.get(path.stem if path.parent.name == 'notebooks' else '', (0,) * 5)))
    worse = {kind: found[kind][:3] for kind in saved.KINDS if len(found[kind]) > allowed[kind]}
    assert not worse, f"{path.name}: {worse}"


def test_the_reading_finds_each_kind(tmp_path):
    def stream(name, text): return {'output_type': 'stream', 'name': name, 'text': text}
    cells = [{'cell_type': 'code', 'source': '', 'outputs': [
        stream('stderr', 'sizes:  50%|#####     | 3/6 [00:10<00:10]\r'), stream('stderr', '\r   \r'),
        stream('stderr', '/opt/venv/lib/python3.12/site-packages/torch/x.py:1: UserWarning: hm\n'),
        stream('stdout', 'x' * 200 + '\n' + 'ok\n' * 70)]}]
    (tmp_path / 'n.ipynb').write_text(json.dumps({'cells': cells}))
    found = saved.problems(tmp_path / 'n.ipynb')
    assert [len(found[k]) for k in saved.KINDS] == [2, 1, 1, 1, 1]
    assert found['machine paths'][0][1].startswith('/opt/venv/lib/python3.12')

"""Autotuning results on disk: a second session reads the winner instead of timing again; any change to the GPU,
the code, the shape or the dtype tunes again; a damaged file is ignored."""
from types import SimpleNamespace

from course.autotune import Trial
from course.tuning_cache import code_version, load_winner, tuned


def variants(*tiles, source='kernel v1'):
    return [SimpleNamespace(params={'BM': bm, 'BN': bn, 'ALIGNED': True}, source=f'{source} {bm} {bn}') for bm, bn in tiles]


class CountingTuner:
    "Pretends to time the variants: the one with the largest BM wins; counts its calls."
    def __init__(self): self.calls = 0
    def __call__(self, vs, h, k, w, progress=True, dtype='float32'):
        self.calls += 1
        return [Trial(v, 1.0 / v.params['BM']) for v in sorted(vs, key=lambda v: -v.params['BM'])]


def test_a_second_session_reads_the_winner_instead_of_tuning(tmp_path):
    path, tune = tmp_path / 'tuning.json', CountingTuner()
    space = variants((64, 64), (128, 64), (32, 32))
    assert tuned(space, 100, 200, 300, path=path, gpu='gpu A', tune=tune).params['BM'] == 128
    fresh = variants((64, 64), (128, 64), (32, 32))               # a new session: new objects, same code
    winner = tuned(fresh, 100, 200, 300, path=path, gpu='gpu A', tune=tune)
    assert tune.calls == 1 and winner is fresh[1]


def test_a_change_of_gpu_code_shape_or_dtype_tunes_again(tmp_path):
    path, tune = tmp_path / 'tuning.json', CountingTuner()
    space = variants((64, 64), (128, 64))
    tuned(space, 100, 200, 300, path=path, gpu='gpu A', tune=tune)
    tuned(space, 100, 200, 300, path=path, gpu='gpu B', tune=tune)
    tuned(variants((64, 64), (128, 64), source='kernel v2'), 100, 200, 300, path=path, gpu='gpu A', tune=tune)
    tuned(space, 100, 200, 301, path=path, gpu='gpu A', tune=tune)
    tuned(space, 100, 200, 300, dtype='bfloat16', path=path, gpu='gpu A', tune=tune)
    assert tune.calls == 5
    tuned(space, 100, 200, 300, path=path, gpu='gpu B', tune=tune)         # every one of them is kept
    assert tune.calls == 5


def test_a_damaged_file_counts_as_empty(tmp_path):
    path, tune = tmp_path / 'tuning.json', CountingTuner()
    path.write_text('{"half a file')
    space = variants((64, 64), (128, 64))
    assert tuned(space, 8, 8, 8, path=path, gpu='g', tune=tune).params['BM'] == 128 and tune.calls == 1
    assert load_winner(space, 8, 8, 8, 'float32', 'g', path) is space[1]


def test_a_winner_missing_from_the_space_tunes_again(tmp_path):
    path, tune = tmp_path / 'tuning.json', CountingTuner()
    tuned(variants((64, 64), (128, 64)), 8, 8, 8, path=path, gpu='g', tune=tune)
    smaller = variants((64, 64), (128, 64))
    smaller[1].params = {'BM': 256, 'BN': 64, 'ALIGNED': True}          # same sources, but that winner is gone
    assert load_winner(smaller, 8, 8, 8, 'float32', 'g', path) is None


def test_the_code_version_ignores_order_and_sees_any_change():
    a, b = variants((64, 64), (128, 64)), variants((128, 64), (64, 64))
    assert code_version(a) == code_version(b)
    assert code_version(a) != code_version(variants((64, 64), (128, 64), source='kernel v1 '))


def test_remembered_computes_once_per_gpu_and_code(tmp_path):
    from course.tuning_cache import remembered
    path, calls = tmp_path / 'tuning.json', []
    def compute(): calls.append(1); return {'a': (1.5, 2)}
    space = variants((64, 64))
    assert remembered('calibration', space, compute, path=path, gpu='g') == {'a': [1.5, 2]}
    assert remembered('calibration', variants((64, 64)), compute, path=path, gpu='g') == {'a': [1.5, 2]}
    assert len(calls) == 1
    remembered('calibration', space, compute, path=path, gpu='other')
    remembered('calibration', variants((64, 64), source='kernel v2'), compute, path=path, gpu='g')
    assert len(calls) == 3


def test_remembered_keeps_how_long_the_computation_took(tmp_path):
    import time
    from course.tuning_cache import remembered, remembered_seconds
    path, space = tmp_path / 'tuning.json', variants((64, 64))
    assert remembered_seconds('calibration', space, path=path, gpu='g') is None         # nothing computed yet
    def compute(): time.sleep(0.05); return {'a': 1}
    remembered('calibration', space, compute, path=path, gpu='g')
    took = remembered_seconds('calibration', space, path=path, gpu='g')
    assert 0.05 <= took < 5
    assert remembered('calibration', space, compute, path=path, gpu='g') == {'a': 1}   # read back: the time stays
    assert remembered_seconds('calibration', space, path=path, gpu='g') == took
    assert remembered_seconds('calibration', space, path=path, gpu='other') is None

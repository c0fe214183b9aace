"""The layers over several processes (course.tensor_parallel, run by course.tp_run under torchrun with gloo on the
CPU), the checker that judges them against wrong answers of the kinds a ring gets wrong, and the timeline model of
course.overlap_model."""
import pytest
import torch

from course import overlap_model as om
from course.tp_run import CHUNKED, LAYERS, error_ratio, launch


def shapes_ok(result):
    return [(r['layer'], r['chunks'], tuple(r['shape'])) for r in result['results'] if not r['ok']]


@pytest.mark.parametrize('processes', [2, 3])
def test_every_layer_matches_the_one_process_product(processes):
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available(): pytest.skip("torch.distributed with gloo is not here")
    result = launch(processes, 'check', dtype='bfloat16', shapes=[[6 * processes, 20, 3 * processes],
                                                                  [12 * processes, 7, 5 * processes]], chunks=[1, 2, 3])
    assert result['processes'] == processes
    assert shapes_ok(result) == []
    assert {r['layer'] for r in result['results']} == set(LAYERS)
    assert {r['chunks'] for r in result['results'] if r['layer'] in CHUNKED} == {1, 2, 3}


def test_launch_says_why_the_processes_failed():
    with pytest.raises(RuntimeError, match='torchrun with 2 processes failed'):
        launch(2, 'check', dtype='bfloat16', shapes='not json')
    with pytest.raises(ValueError): launch(1, 'check')
    with pytest.raises(ValueError): launch(2, 'train')


def _inputs(m=24, k=40, n=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g).bfloat16(), torch.randn(k, n, generator=g).bfloat16()


def _column_wrong_answers(x, w, p=4):
    "Outputs a column-parallel ring could give by mistake (X's rows from p processes, all of them needed)."
    right = (x.float() @ w.float()).bfloat16()
    blocks = list(right.split(x.shape[0] // p))
    yield 'blocks rotated by one owner', torch.cat(blocks[1:] + blocks[:1])
    yield 'one owner\'s rows twice', torch.cat([blocks[0], blocks[0]] + blocks[2:])
    yield 'a block never filled (zeros)', torch.cat(blocks[:-1] + [torch.zeros_like(blocks[-1])])
    yield 'chunks of a block swapped', torch.cat([torch.cat(blocks[0].split(blocks[0].shape[0] // 2)[::-1])] + blocks[1:])
    yield 'one row off', torch.roll(right, 1, dims=0)
    yield 'the last column of K left out', (x[:, :-1].float() @ w[:-1].float()).bfloat16()


def _row_wrong_answers(x, w, p=4):
    "Outputs a row-parallel ring could give (sums of p partials over slices of K)."
    parts = [(a.float() @ b.float()) for a, b in zip(x.split(x.shape[1] // p, dim=1), w.split(w.shape[0] // p))]
    yield 'a hop\'s partial left out', sum(parts[1:]).bfloat16()
    yield 'a partial added twice', (sum(parts) + parts[2]).bfloat16()
    yield 'partials of other rows added', (sum(parts[:-1]) + torch.roll(parts[-1], 1, dims=0)).bfloat16()
    yield 'sums of another process\'s rows', torch.roll(sum(parts), x.shape[0] // p, dims=0).bfloat16()


def test_the_checker_passes_right_answers_in_both_dtypes():
    x, w = _inputs()
    assert error_ratio((x.float() @ w.float()).bfloat16(), x, w, 1, torch.bfloat16) <= 1
    parts = [(a.float() @ b.float()).bfloat16() for a, b in zip(x.split(10, dim=1), w.split(10))]
    total = parts[0]
    for part in parts[1:]: total = total + part              # four bf16 partials summed in bf16, as NCCL does
    assert error_ratio(total, x, w, 4, torch.bfloat16) <= 1
    xf, wf = x.float(), w.float()
    assert error_ratio(xf @ wf, xf, wf, 1, torch.float32) <= 1


@pytest.mark.parametrize('kind', ['column', 'row'])
def test_the_checker_fails_every_wrong_answer(kind):
    for seed in range(5):
        x, w = _inputs(seed=seed)
        wrongs = _column_wrong_answers(x, w) if kind == 'column' else _row_wrong_answers(x, w)
        for what, out in wrongs:
            assert error_ratio(out, x, w, 4 if kind == 'row' else 1, torch.bfloat16) > 1, what


# The timeline model

MACHINE = om.Machine(bandwidth=250e3, rate=700e6, latency_us=10, launch_us=5, comm_share=0.0)


def test_the_serial_column_layer_is_the_all_gather_then_the_multiply():
    m, k, n, p = 8192, 8192, 8192, 2
    work = om.column_parallel(m, k, n, p, MACHINE, overlap=False)
    gather = 10 + (p - 1) * (m // p) * k * 2 / 250e3
    multiply = 5 + 2 * m * k * (n // p) / 700e6
    assert [w.stream for w in work] == ['link', 'compute']
    assert om.layer_us(work) == pytest.approx(gather + multiply)
    assert om.scaling_share(work, m, k, n, p, MACHINE) == pytest.approx((5 + 2 * m * k * n / 700e6) / (p * (gather + multiply)))


def test_a_ring_hides_the_transfers_behind_the_multiplies():
    m, k, n, p = 8192, 8192, 8192, 4
    serial = om.layer_us(om.column_parallel(m, k, n, p, MACHINE, overlap=False))
    for chunks in (1, 2, 4):
        work = om.column_parallel(m, k, n, p, MACHINE, chunks=chunks)
        links = [w for w in work if w.stream == 'link']
        assert len(links) == (p - 1) * chunks
        assert all(a.end <= b.start + 1e-9 for a, b in zip(links, links[1:]))         # one transfer at a time
        multiplies = [w for w in work if w.stream == 'compute']
        assert len(multiplies) == p * chunks
        for i, mult in enumerate(multiplies[chunks:]):                                # a chunk after it landed
            assert mult.start >= links[i].end - 1e-9
        assert om.layer_us(work) < serial
        busy = sum(w.end - w.start for w in multiplies)
        assert om.layer_us(work) >= busy - 1e-9


def test_transfers_slow_the_multiplies_by_their_share_of_the_gpu():
    m, k, n, p = 4096, 4096, 4096, 2
    free = om.layer_us(om.column_parallel(m, k, n, p, MACHINE, chunks=2))
    shared = om.layer_us(om.column_parallel(m, k, n, p, MACHINE._replace(comm_share=0.2), chunks=2))
    assert shared > free
    alone = om.Machine(bandwidth=1e12, rate=1e6, latency_us=0, launch_us=0, comm_share=0.5)   # transfers take no time
    assert om.layer_us(om.column_parallel(8, 8, 8, 2, alone, chunks=1)) == pytest.approx(2 * 8 * 8 * 4 / 1e6)


def test_the_row_layer_adds_what_it_received_before_passing_it_on():
    m, k, n, p = 4096, 8192, 4096, 4
    for chunks in (1, 2):
        work = om.row_parallel(m, k, n, p, MACHINE, chunks=chunks)
        assert sum(w.stream == 'link' for w in work) == (p - 1) * chunks
        assert sum('add' in w.label for w in work) == (p - 1) * chunks
        assert sum('multiply' in w.label for w in work) == p * chunks
        sends = [w for w in work if w.stream == 'link']
        adds = [w for w in work if 'add' in w.label]
        for send, add in zip(sends, adds):                     # hop h's add waits for hop h - 1's send
            assert add.start >= send.end - 1e-9
    assert om.layer_us(om.row_parallel(m, k, n, p, MACHINE, chunks=2)) < om.layer_us(om.row_parallel(m, k, n, p, MACHINE, overlap=False))


def test_best_chunks_is_the_fastest_count_tried():
    m, k, n, p = 8192, 8192, 8192, 4
    best, us = om.best_chunks(om.column_parallel, m, k, n, p, MACHINE, most=8)
    for c in (1, 2, 4, 8):
        assert us <= om.layer_us(om.column_parallel(m, k, n, p, MACHINE, chunks=c)) + 1e-9
    assert us == pytest.approx(om.layer_us(om.column_parallel(m, k, n, p, MACHINE, chunks=best)))


def test_bad_layers_are_refused():
    for bad in [dict(gpus=1), dict(chunks=0), dict(m=100, chunks=3), dict(n=10, gpus=4), dict(m=2.5)]:
        args = dict(m=96, k=8, n=96, gpus=2, chunks=1) | bad
        with pytest.raises(ValueError):
            om.column_parallel(args['m'], args['k'], args['n'], args['gpus'], MACHINE, chunks=args['chunks'])


def test_the_drawing_has_a_panel_per_layer():
    import matplotlib
    matplotlib.use('Agg')
    fig = om.draw_layers({'serial': om.column_parallel(96, 8, 96, 2, MACHINE, overlap=False),
                          'ring': om.column_parallel(96, 8, 96, 2, MACHINE, chunks=2)})
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title(loc='left').startswith('serial')


def _fake_timing(p=2, shape=(8192, 8192, 8192)):
    def sp(ms): return {'median': ms, 'q1': ms * 0.99, 'q3': ms * 1.01, 'samples': []}
    times = {'one GPU, whole product': sp(1.5), 'all-gather of X alone': sp(0.35), 'pull of X alone (copy engines)': sp(0.22),
             "multiply alone (X by this GPU's columns)": sp(0.75), 'column serial': sp(1.05),
             'column ring, 1 chunk(s)': sp(1.2), 'column pull, 1 chunk(s)': sp(0.9)}
    return {'processes': p, 'dtype': 'bfloat16', 'results': [{'shape': list(shape), 'times': times,
                                                              'cpu_us': {k: 100.0 for k in times}}]}


def test_the_timing_table_gives_shares_and_verdicts_in_short_lines():
    from course.tp_run import layer_lines
    lines = layer_lines(_fake_timing())
    assert all(len(l) <= 140 for l in lines)
    pull = next(l for l in lines if 'column pull' in l)
    assert f"{1.5 / (2 * 0.9):4.2f} of linear" in pull and 'faster vs serial' in pull and 'CPU 0.100 ms' in pull
    assert 'slower vs serial' in next(l for l in lines if 'column ring' in l)


def test_with_queued_times_the_shares_and_the_model_use_them_and_both_times_are_printed():
    from course.tp_run import layer_lines, measured_machine
    timed = _fake_timing()
    entry = timed['results'][0]
    entry['queued'] = {k: {**v, 'median': v['median'] * 0.8, 'q1': v['q1'] * 0.8, 'q3': v['q3'] * 0.8}
                       for k, v in entry['times'].items()}
    lines = layer_lines(timed)
    assert all(len(l) <= 140 for l in lines) and 'alone / queued' in lines[0]
    pull = next(l for l in lines if 'column pull' in l)
    assert f" 0.900 / {0.9 * 0.8:6.3f} ms" in pull and f"{1.5 / (2 * 0.9):4.2f} of linear" in pull   # one GPU queued too
    machine = measured_machine(timed, (8192, 8192, 8192), 'pull')
    assert machine.latency_us + 4096 * 8192 * 2 / machine.bandwidth == pytest.approx(0.22e3 * 0.8)


def test_the_measured_machine_reproduces_the_parts_alone():
    from course.tp_run import measured_machine
    timed, (m, k, n) = _fake_timing(), (8192, 8192, 8192)
    for link, ms in (('all-gather', 0.35), ('pull', 0.22)):
        machine = measured_machine(timed, (m, k, n), link)
        assert machine.latency_us + (m // 2) * k * 2 / machine.bandwidth == pytest.approx(ms * 1e3)
        assert machine.launch_us + 2 * m * k * (n // 2) / machine.rate == pytest.approx(0.75e3)


def test_a_measured_timeline_reads_back_as_work_and_draws_beside_the_model():
    import matplotlib
    matplotlib.use('Agg')
    from course.tp_run import measured_work
    timed = _fake_timing()
    pieces = [['compute', 'publish and barrier', 0.0, 20.0], ['link', 'rows of GPU 1, chunk 0', 25.0, 260.0],
              ['compute', 'multiply rows of GPU 0, chunk 0', 22.0, 400.0], ['compute', 'multiply rows of GPU 1, chunk 0', 401.0, 780.0],
              ['compute', 'barrier', 781.0, 790.0]]
    timed['results'][0]['timelines'] = {'column pull, 1 chunk(s)': pieces}
    work = measured_work(timed, (8192, 8192, 8192), 'column pull, 1 chunk(s)')
    assert [w.stream for w in work] == ['compute', 'link', 'compute', 'compute', 'compute'] and om.layer_us(work) == 790.0
    with pytest.raises(KeyError, match='recorded'): measured_work(timed, (8192, 8192, 8192), 'column pull, 2 chunk(s)')
    fig = om.draw_layers({'model': om.column_parallel(8192, 8192, 8192, 2, MACHINE), 'measured': work})
    bars = [p for ax in fig.axes for p in ax.patches]
    assert any(abs(p.get_facecolor()[0] - 0x99 / 255) < 1e-6 for p in bars)          # the barriers in grey
    assert 'publish, barriers (measured)' in [t.get_text() for t in fig.legends[0].get_texts()]


def test_time_by_kind_splits_a_layer_into_multiplies_barriers_idle_and_transfers():
    work = [om.Work('compute', 'publish and barrier', 0.0, 20.0), om.Work('link', 'rows of GPU 1, chunk 0', 25.0, 260.0),
            om.Work('link', 'rows of GPU 1, chunk 1', 200.0, 300.0), om.Work('compute', 'multiply a', 30.0, 400.0),
            om.Work('compute', 'multiply b', 450.0, 780.0), om.Work('compute', 'barrier', 781.0, 790.0)]
    t = om.time_by_kind(work)
    assert t == {'layer': 790.0, 'multiplies': 700.0, 'publish and barriers': 29.0, 'compute idle': 61.0,
                 'transfers': 275.0}
    model = om.time_by_kind(om.column_parallel(8192, 8192, 8192, 2, MACHINE, chunks=2))
    assert model['publish and barriers'] == 0 and model['multiplies'] + model['compute idle'] == pytest.approx(model['layer'])


@pytest.mark.skipif(__import__('torch').cuda.is_available(), reason="checks the sentence given where no Hopper GPU is")
def test_without_a_hopper_gpu_the_course_kernel_says_why_it_is_left_out():
    from course.tp_run import _course_kernel
    said = _course_kernel(0)
    assert isinstance(said, str) and said.startswith("the course's Hopper kernel did not run")

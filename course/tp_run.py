"""Run the tensor-parallel layers of course.tensor_parallel in several processes, and read their results back.

A notebook is one process; a layer over P GPUs needs P of them, one per GPU. `launch(P, 'check')` (or 'time') starts
them with `torchrun`, each running this module's `main`, and returns what process 0 wrote: a dict read from JSON.
On a machine without P GPUs the processes run on the CPU with the gloo backend (as CI does), so the same code is
checked everywhere; only the times need GPUs.

Every process is started with NVLink multicast switched off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1): the course never relies on it.

    python -m torch.distributed.run --standalone --nproc-per-node 2 -m course.tp_run check --out result.json
"""
import argparse, json, os, subprocess, sys, tempfile
from pathlib import Path

MULTICAST_OFF = {'NCCL_NVLS_ENABLE': '0', 'TORCH_SYMM_MEM_DISABLE_MULTICAST': '1', 'NVSHMEM_DISABLE_NVLS': '1'}
LAYERS = ('column serial', 'column ring', 'column pull', 'column pull, peers at once', 'row serial', 'row ring')
CHUNKED = ('column ring', 'column pull', 'column pull, peers at once', 'row ring')
CHECK_SHAPES = [(8, 16, 8), (24, 40, 12), (48, 8, 20)]      # (m, k, n): m rows of X, k = X's columns, n = W's
QUEUED = 4                 # calls queued back to back in a 'queued' sample: the GPU's time per call in a loop


def gpus_here():
    "How many CUDA GPUs this machine has (0 where torch sees none)."
    import torch
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def launch(processes, mode, timeout=900, **options):
    """Run `mode` ('check' or 'time') in `processes` processes under torchrun and return process 0's results. The
    processes use the GPUs where there are at least `processes` of them, else the CPU (gloo). `options` become
    command-line flags (shapes=[(m, k, n)], chunks=[1, 2], dtype='bfloat16', rounds=20). Raises RuntimeError with
    the processes' last output lines where they fail."""
    if mode not in ('check', 'time'): raise ValueError(f"mode must be 'check' or 'time', got {mode!r}")
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 2:
        raise ValueError(f"processes must be an int of at least 2, got {processes!r}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / 'result.json'
        flags = [f"--{name.replace('_', '-')}={value if isinstance(value, str) else json.dumps(value)}"
                 for name, value in options.items()]
        command = [sys.executable, '-m', 'torch.distributed.run', '--standalone', f'--nproc-per-node={processes}',
                   '-m', 'course.tp_run', mode, f'--out={out}', *flags]
        env = {**os.environ, **MULTICAST_OFF, 'OMP_NUM_THREADS': '1',
               'PYTHONPATH': os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get('PYTHONPATH', '')])}
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0 or not out.exists():
            tail = '\n'.join((run.stdout + run.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"torchrun with {processes} processes failed (exit code {run.returncode}):\n{tail}")
        return json.loads(out.read_text())


def _shards(m, k, n, dtype, device, seed=0):
    "The same random X (m x k) and W (k x n) in every process."
    import torch
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(m, k, generator=g).to(device=device, dtype=dtype),
            torch.randn(k, n, generator=g).to(device=device, dtype=dtype))


def _mine(total, rank, size):
    "The slice of `total` rows (or columns) that process `rank` of `size` holds."
    return slice(rank * total // size, (rank + 1) * total // size)


def _chunk_counts(rows, size, chunk_counts):
    "The counts of `chunk_counts` that split a process's rows (rows / size) into whole chunks."
    return [chunks for chunks in chunk_counts if (rows // size) % chunks == 0]


def _layer_runs(rows, size, chunk_counts):
    """(layer, chunks) for every layer of LAYERS: the chunked ones once per count of `chunk_counts` that splits a
    process's rows into whole chunks (_chunk_counts), the others once."""
    for name in LAYERS:
        for chunks in (_chunk_counts(rows, size, chunk_counts) if name in CHUNKED else [1]): yield name, chunks


def _prepare(name, x, w, rank, size, chunks):
    """Layer `name` of this process, made ready to run on the whole X and W: (run, (rows, cols)), where run() returns
    this process's output and X W[rows, cols] is what it must equal. The shards are cut here, not in run()."""
    from . import tensor_parallel as tp
    m, k, n = x.shape[0], x.shape[1], w.shape[1]
    if name.startswith('column'):
        x_rows, w_cols, where = x[_mine(m, rank, size)].contiguous(), w[:, _mine(n, rank, size)].contiguous(), \
            (slice(None), _mine(n, rank, size))
        if name == 'column serial': return (lambda: tp.column_parallel_serial(x_rows, w_cols)), where
        if name.startswith('column pull'):
            shards, at_once = tp.PeerShards(*x_rows.shape, x_rows.dtype, x_rows.device), name.endswith('at once')
            return (lambda: tp.column_parallel_pull(x_rows, w_cols, shards, chunks, at_once=at_once)), where
        return (lambda: tp.column_parallel_ring(x_rows, w_cols, chunks)), where
    x_cols, w_rows, where = x[:, _mine(k, rank, size)].contiguous(), w[_mine(k, rank, size)].contiguous(), \
        (_mine(m, rank, size), slice(None))
    if name == 'row serial': return (lambda: tp.row_parallel_serial(x_cols, w_rows)), where
    return (lambda: tp.row_parallel_ring(x_cols, w_rows, chunks)), where


def _fused_all_gather_matmul(x, w, rank, size):
    """torch's own overlapped column-parallel layer (symmetric memory, `fused_all_gather_matmul`) made ready to run,
    or the sentence saying why it cannot run here."""
    import torch
    import torch.distributed as dist
    try:
        from torch.distributed._symmetric_memory import enable_symm_mem_for_group
        group = dist.group.WORLD.group_name
        enable_symm_mem_for_group(group)
        x_rows = x[_mine(x.shape[0], rank, size)].contiguous()
        w_cols = w[:, _mine(w.shape[1], rank, size)].contiguous()
        run = lambda: torch.ops.symm_mem.fused_all_gather_matmul(x_rows, [w_cols], gather_dim=0, group_name=group)[1][0]
        run()
        return run
    except Exception as e:                            # an older torch, or symmetric memory refused on this machine
        return f"torch's fused_all_gather_matmul did not run: {type(e).__name__}: {str(e).splitlines()[0][:160]}"


def _course_kernel(rank):
    """Notebook 14's tuned Hopper kernel (bf16), its tuning kept in a file of this process's own, or the sentence
    saying why it cannot run here."""
    try:
        from utils import import_notebook
        from .hopper_tuning import tuned_matmul
        nb13 = import_notebook('13')
        kernel = tuned_matmul(nb13.HOPPER_SOURCE, nb13.MMA_SYNC_FALLBACK,
                              path=Path(tempfile.gettempdir()) / f'course-tp-tuning-{os.getpid()}-{rank}.json')
        missing = kernel.unavailable()
        return kernel if missing is None else f"the course's Hopper kernel did not run: {missing}"
    except Exception as e:
        return f"the course's Hopper kernel did not run: {type(e).__name__}: {str(e).splitlines()[0][:160]}"


def error_ratio(out, x, w, sums, dtype):
    """The worst |out - X W| over its bound, the product in float64: inputs as given, `sums` roundings of partial sums
    (1 for a layer whose sums are made in one multiply, P for a reduce-scatter's P partials added in the output's
    dtype), each at most the dtype's unit roundoff of the running sum, plus fp32 additions of k terms."""
    import torch
    u = {torch.float32: 2.0**-24, torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}[dtype]
    exact, scale = x.double() @ w.double(), x.double().abs() @ w.double().abs()
    bound = (sums * u + x.shape[1] * 2.0**-23) * scale + 1e-300
    return ((out.double() - exact).abs() / bound).max().item()


def _check(args, rank, size, device):
    import torch
    dtype, results = getattr(torch, args.dtype), []
    for m, k, n in args.shapes:
        x, w = _shards(m, k, n, dtype, device)
        for name, chunks in _layer_runs(m, size, args.chunks):
            run, (rows, cols) = _prepare(name, x, w, rank, size, chunks)
            out, x_part, w_part = run(), x[rows], w[:, cols]
            sums = size if name.startswith('row') else 1
            worst = torch.tensor([error_ratio(out, x_part, w_part, sums, dtype)], device=device)
            torch.distributed.all_reduce(worst, op=torch.distributed.ReduceOp.MAX)
            right_shape = tuple(out.shape) == (x_part.shape[0], w_part.shape[1])
            results.append({'shape': [m, k, n], 'layer': name, 'chunks': chunks, 'worst': worst.item(),
                            'ok': bool(worst.item() <= 1 and right_shape)})
    return {'processes': size, 'device': str(device), 'dtype': args.dtype, 'results': results}


def _time(args, rank, size, device):
    """Each layer's time (the slowest process's, each round) over `args.rounds` interleaved rounds, beside its parts
    alone (the all-gather, the pull, this process's multiply) and the whole product on one GPU, on each shape. Two
    samples per round: a call alone from an idle GPU ('times': the CPU's issue time is inside it), and QUEUED calls
    back to back, per call ('queued': the CPU prepares a call while the GPU runs the one before, as in a model's
    forward pass, and as the course's one-GPU timings do)."""
    import torch
    import torch.distributed as dist
    from . import tensor_parallel as tp
    from .timing import cpu_us_per_call, spread
    dtype, results, notes = getattr(torch, args.dtype), [], []
    for m, k, n in args.shapes:
        x, w = _shards(m, k, n, dtype, device)
        gathered, x_rows = x.new_empty(m, k), x[_mine(m, rank, size)].contiguous()
        w_cols = w[:, _mine(n, rank, size)].contiguous()
        shards = tp.PeerShards(*x_rows.shape, x_rows.dtype, device)
        shards.publish(x_rows)
        peer_streams = [torch.cuda.Stream(device=device) for _ in range(size - 1)]
        def pull_alone(at_once):                       # every other GPU's rows, copied by the copy engines
            here = torch.cuda.current_stream(device)
            for hop in range(1, size):
                owner, stream = (rank + hop) % size, peer_streams[hop - 1] if at_once else here
                stream.wait_stream(here)
                with torch.cuda.stream(stream):
                    gathered[owner * x_rows.shape[0]:(owner + 1) * x_rows.shape[0]].copy_(shards.peers[owner])
                here.wait_stream(stream)
        runs = {'one GPU, whole product': lambda: x @ w,
                'all-gather of X alone': lambda: dist.all_gather_into_tensor(gathered, x_rows),
                'pull of X alone (copy engines)': lambda: pull_alone(False),
                'pull of X alone, peers at once': lambda: pull_alone(True),
                'multiply alone (X by this GPU\'s columns)': lambda: x @ w_cols}
        for name, chunks in _layer_runs(m, size, args.chunks):
            runs[name + (f", {chunks} chunk(s)" if name in CHUNKED else '')] = _prepare(name, x, w, rank, size, chunks)[0]
        fused = _fused_all_gather_matmul(x, w, rank, size)
        if callable(fused): runs["torch's fused_all_gather_matmul"] = fused
        elif fused not in notes: notes.append(fused)
        course = _course_kernel(rank) if args.course_kernel else None
        if callable(course):                           # the same pull, each chunk multiplied by the course's kernel
            hopper_shards = tp.PeerShards(*x_rows.shape, x_rows.dtype, device)
            runs['multiply alone, Hopper kernel'] = lambda: course(x, w_cols)
            for chunks in _chunk_counts(m, size, args.chunks):
                runs[f"column pull, Hopper kernel, {chunks} chunk(s)"] = \
                    lambda chunks=chunks: tp.column_parallel_pull(x_rows, w_cols, hopper_shards, chunks, matmul=course)
        elif course is not None and course not in notes: notes.append(course)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = {kind: {label: [] for label in runs} for kind in ('times', 'queued')}
        for _ in range(3): [fn() for fn in runs.values()]            # warm up: NCCL's connections, cuBLAS's plans
        for r in range(args.rounds):
            for label in (list(runs)[r % len(runs):] + list(runs)[:r % len(runs)]):   # an order that turns each round
                for kind, calls in (('times', 1), ('queued', QUEUED)):
                    dist.barrier(device_ids=[device.index])
                    torch.cuda.synchronize()
                    start.record()
                    for _ in range(calls): runs[label]()
                    end.record(); torch.cuda.synchronize()
                    took = torch.tensor([start.elapsed_time(end) / calls], device=device)
                    dist.all_reduce(took, op=dist.ReduceOp.MAX)        # a layer ends with its slowest GPU
                    samples[kind][label].append(took.item())
        timelines = {}                                 # GPU 0's streams during one call of the pull, after the rest
        for chunks in _chunk_counts(m, size, args.chunks):
            dist.barrier(device_ids=[device.index])
            torch.cuda.synchronize()
            timeline = tp.Timeline()
            tp.column_parallel_pull(x_rows, w_cols, shards, chunks, timeline=timeline)
            timelines[f"column pull, {chunks} chunk(s)"] = [list(piece) for piece in timeline.work()]
        cpu = {}
        for label, fn in runs.items():                 # what a call costs the CPU (kernels queued, not waited for)
            spent = torch.tensor([cpu_us_per_call(fn, calls=20, warmup=2)], device=device)
            dist.all_reduce(spent, op=dist.ReduceOp.MAX)
            cpu[label] = spent.item()
        results.append({'shape': [m, k, n], **{kind: {label: spread(s)._asdict() for label, s in by_label.items()}
                                                for kind, by_label in samples.items()}, 'cpu_us': cpu,
                        'timelines': timelines if rank == 0 else {}})
        shards.done()
        del x, w, gathered, runs, shards
        torch.cuda.empty_cache()
    return {'processes': size, 'device': torch.cuda.get_device_name(device), 'dtype': args.dtype,
            'torch': torch.__version__, 'nccl': '.'.join(map(str, torch.cuda.nccl.version())), 'notes': notes,
            'results': results}


def main(argv=None):
    import torch
    import torch.distributed as dist
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('mode', choices=('check', 'time'))
    parser.add_argument('--out', required=True)
    parser.add_argument('--shapes', type=json.loads, default=CHECK_SHAPES)
    parser.add_argument('--chunks', type=json.loads, default=[1, 2, 3])
    parser.add_argument('--dtype', default='float32', choices=('float32', 'bfloat16', 'float16'))
    parser.add_argument('--rounds', type=json.loads, default=20)
    parser.add_argument('--course-kernel', type=json.loads, default=False,
                        help="also time the pull with notebook 14's tuned Hopper kernel multiplying each chunk")
    args = parser.parse_args(argv)
    rank, size = int(os.environ['RANK']), int(os.environ['WORLD_SIZE'])
    on_gpus = gpus_here() >= size
    if args.mode == 'time' and not on_gpus: raise SystemExit(f"timing needs {size} GPUs; this machine has {gpus_here()}")
    device = torch.device('cuda', rank) if on_gpus else torch.device('cpu')
    if on_gpus: torch.cuda.set_device(device)
    dist.init_process_group('nccl' if on_gpus else 'gloo', **({'device_id': device} if on_gpus else {}))
    try:
        result = (_check if args.mode == 'check' else _time)(args, rank, size, device)
        if rank == 0: Path(args.out).write_text(json.dumps(result, indent=1))
    finally:
        dist.destroy_process_group()



def _spread_of(entry):
    from .timing import Spread
    return Spread(entry['median'], entry['q1'], entry['q3'], tuple(entry.get('samples', ())))


def shape_entry(result, shape):
    "The entry of a 'time' result for one shape (m, k, n)."
    return next(e for e in result['results'] if e['shape'] == list(shape))


def timings(entry, kind=None):
    """{label: Spread} of one shape's entry of a 'time' result: `kind` 'queued' (calls back to back, per call) or
    'times' (a call alone from an idle GPU); unless said, 'queued' where the result has it."""
    kind = kind or ('queued' if 'queued' in entry else 'times')
    return {label: _spread_of(t) for label, t in entry[kind].items()}


def layer_lines(result):
    """Lines for a table of a 'time' result: per shape, each run's median alone (a call from an idle GPU) and queued
    (calls back to back) where measured, with the queued middle half in brackets, what a call costs the CPU (where
    measured: the Python and launches of one call, kernels queued, not waited for), and for each layer its share of
    linear scaling (the one-GPU time over P times the layer's) and its verdict against the serial layer of the same
    kind (course.timing.verdict), both from the queued times where there are some. The lines fit in 140 characters."""
    from .timing import verdict
    p, lines = result['processes'], []
    for entry in result['results']:
        m, k, n = entry['shape']
        times, alone = timings(entry), timings(entry, 'times')
        one, both = times['one GPU, whole product'].median, 'queued' in entry
        lines.append(f"{m} x {k} @ {k} x {n} on {p} GPUs ({result['dtype']})" +
                     (": a call alone / queued (middle half), share and verdict from queued" if both else ":"))
        for label, t in times.items():
            line = f"  {label:40s} " + (f"{alone[label].median:6.3f} / " if both else "") + \
                f"{t.median:6.3f} ms ({t.q1:.3f}-{t.q3:.3f})"
            if 'cpu_us' in entry: line += f", CPU {entry['cpu_us'][label] / 1e3:.3f} ms"
            if label.startswith(('column', 'row', "torch's")):
                serial = times['row serial' if label.startswith('row') else 'column serial']
                line += f"  {one / (p * t.median):4.2f} of linear"
                if not label.endswith('serial'): line += f", {verdict(t, serial)} vs serial"
            lines.append(line)
    return lines


def measured_work(result, shape, label):
    """GPU 0's pieces of work in one call of layer `label` ('column pull, 1 chunk(s)', say) on `shape`, as a 'time'
    result recorded them (course.tensor_parallel.Timeline): [overlap_model.Work], µs from the call's start, for
    overlap_model.draw_layers beside the model's."""
    from .overlap_model import Work
    entry = shape_entry(result, shape)
    if label not in entry.get('timelines', {}):
        raise KeyError(f"no timeline of {label!r} on {shape}: the run recorded {sorted(entry.get('timelines', {}))}")
    return [Work(*piece) for piece in entry['timelines'][label]]


def measured_machine(result, shape, link='all-gather', latency_us=10.0, launch_us=5.0):
    """An overlap_model.Machine from a 'time' result's parts on `shape`: the bandwidth of its transfer alone (`link`:
    'all-gather', NCCL's kernels, 'pull', the copy engines one peer after another, or 'pull at once', from every peer
    at the same time; each GPU receives (P - 1) / P of X) and the rate of its
    multiply alone; the fixed costs as given. A pull takes no multiprocessors (comm_share 0); NCCL's share is left
    at 0 too, so that where the measured layer is slower than this model, the difference is what sharing costs."""
    from .overlap_model import Machine
    p = result['processes']
    entry = shape_entry(result, shape)
    m, k, n = shape
    label = {'all-gather': 'all-gather of X alone', 'pull': 'pull of X alone (copy engines)',
             'pull at once': 'pull of X alone, peers at once'}[link]
    times = timings(entry)
    transfer_us, multiply_us = times[label].median * 1e3, times["multiply alone (X by this GPU's columns)"].median * 1e3
    return Machine(bandwidth=(p - 1) * (m // p) * k * 2 / max(transfer_us - latency_us, 1e-9),
                   rate=2 * m * k * (n // p) / max(multiply_us - launch_us, 1e-9), latency_us=latency_us,
                   launch_us=launch_us)


if __name__ == '__main__':
    main()

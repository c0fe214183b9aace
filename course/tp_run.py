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
LAYERS = ('column serial', 'column ring', 'row serial', 'row ring')
CHECK_SHAPES = [(8, 16, 8), (24, 40, 12), (48, 8, 20)]      # (m, k, n): m rows of X, k = X's columns, n = W's


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


def _layer(name, x, w, rank, size, chunks):
    "This process's output of layer `name` on the whole X and W, and the part of X W it must equal: (out, expected slice)."
    from . import tensor_parallel as tp
    m, k, n = x.shape[0], x.shape[1], w.shape[1]
    if name.startswith('column'):
        rows, cols = slice(rank * m // size, (rank + 1) * m // size), slice(rank * n // size, (rank + 1) * n // size)
        fn = tp.column_parallel_serial if name == 'column serial' else lambda a, b: tp.column_parallel_ring(a, b, chunks)
        return fn(x[rows], w[:, cols].contiguous()), (slice(None), cols)
    ks, rows = slice(rank * k // size, (rank + 1) * k // size), slice(rank * m // size, (rank + 1) * m // size)
    fn = tp.row_parallel_serial if name == 'row serial' else lambda a, b: tp.row_parallel_ring(a, b, chunks)
    return fn(x[:, ks].contiguous(), w[ks]), (rows, slice(None))


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
        for name in LAYERS:
            for chunks in (args.chunks if 'ring' in name else [1]):
                if (m // size) % chunks: continue
                out, where = _layer(name, x, w, rank, size, chunks)
                sums = size if name.startswith('row') else 1
                rows, cols = where
                ratio = error_ratio(out, x[rows], w[:, cols], sums, dtype)
                worst = torch.tensor([ratio], device=device)
                torch.distributed.all_reduce(worst, op=torch.distributed.ReduceOp.MAX)
                results.append({'shape': [m, k, n], 'layer': name, 'chunks': chunks, 'worst': worst.item(),
                                'ok': bool(worst.item() <= 1 and tuple(out.shape) == _expected_shape(name, m, n, size))})
    return {'processes': size, 'device': str(device), 'dtype': args.dtype, 'results': results}


def _expected_shape(name, m, n, size):
    return (m, n // size) if name.startswith('column') else (m // size, n)


def _time(args, rank, size, device):
    import torch
    from .timing import spread
    dtype, results = getattr(torch, args.dtype), []
    for m, k, n in args.shapes:
        x, w = _shards(m, k, n, dtype, device)
        one = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        runs = {'one GPU, whole product': lambda: x @ w}
        for name in LAYERS:
            for chunks in (args.chunks if 'ring' in name else [1]):
                if (m // size) % chunks: continue
                label = name + (f", {chunks} chunk(s)" if 'ring' in name else '')
                runs[label] = (lambda name=name, chunks=chunks: _layer(name, x, w, rank, size, chunks))
        samples = {label: [] for label in runs}
        for _ in range(3): [fn() for fn in runs.values()]            # warm up: NCCL's connections, cuBLAS's plans
        for _ in range(args.rounds):
            for label, fn in runs.items():
                torch.distributed.barrier(device_ids=[device.index])
                torch.cuda.synchronize()
                one[0].record(); fn(); one[1].record(); torch.cuda.synchronize()
                took = torch.tensor([one[0].elapsed_time(one[1])], device=device)
                torch.distributed.all_reduce(took, op=torch.distributed.ReduceOp.MAX)   # the layer ends with its slowest GPU
                samples[label].append(took.item())
        results.append({'shape': [m, k, n], 'times': {label: spread(s)._asdict() for label, s in samples.items()}})
    return {'processes': size, 'device': torch.cuda.get_device_name(device), 'dtype': args.dtype, 'results': results}


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


if __name__ == '__main__':
    main()

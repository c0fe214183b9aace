"""A tensor-parallel layer on several GPUs as two streams of work, the multiplies and the transfers: a model on a CPU.

A layer Y = X W split over `gpus` GPUs moves data as well as multiplying it:

- **column-parallel** (X's rows split, W's columns split): every GPU needs all of X, so the rows are *all-gathered*
  first, then each GPU multiplies all of X by its columns of W;
- **row-parallel** (X's columns split, W's rows split): every GPU multiplies its columns of X by its rows of W, a
  partial product of the whole output, and the partials are *reduce-scattered*: summed, each GPU keeping its rows.

Done one after the other (the *serial* layer) the transfer's time adds to the multiply's. Cut into chunks, the two
can overlap: a GPU multiplies the chunk it has while the next one travels (a ring: each GPU passes chunks on to its
neighbour). The model schedules both streams of one GPU (every GPU does the same in a ring) and says when each piece
of work starts and ends:

- a transfer of `b` bytes takes `latency_us + b / bandwidth`, one at a time on the link, `bandwidth` being the bus
  bandwidth NCCL reports for the collective (bytes each GPU receives per second);
- a multiply of m x k by k x n takes `launch_us + 2 m k n / rate`, one at a time on the compute stream, and runs
  `1 / (1 - comm_share)` times slower while a transfer is under way (the transfer's kernels take that share of the
  multiprocessors: NCCL's do; copies by the copy engines take none);
- a ring's reduce-scatter step adds the partial it received to its own (reading both and writing the sum, at
  `memory_bandwidth`) before passing it on; NCCL's serial reduce-scatter adds inside its transfer.

It leaves out: a rate that falls for thin products (pass `rate` as a function of the shape to model it), the
links' own contention (all GPUs send at once, each on its own link), and the CPU's launches (assumed ahead).
"""
from typing import Callable, NamedTuple, Union


class Machine(NamedTuple):
    "What the model needs to know of the GPUs and their links (units: µs, bytes and flops per µs)."
    bandwidth: float            # bytes per µs each GPU receives in a collective (NCCL's bus bandwidth)
    rate: Union[float, Callable[[int, int, int], float]]   # flops per µs of a multiply, or a function of (m, k, n)
    latency_us: float = 10.0    # the fixed cost of one transfer
    launch_us: float = 5.0      # the fixed cost of one multiply (launch, tail of the last wave)
    comm_share: float = 0.0     # share of the multiprocessors a transfer takes while it runs
    memory_bandwidth: float = 3.0e6   # bytes per µs of the GPU's memory, for the reduce-scatter's additions


def h100_machine(bus_gbps=250.0, tflops=700.0, comm_share=0.15):
    "A Machine with an H100's order of magnitude (bus bandwidth in GB/s, bf16 TFLOP/s); measure your own to compare."
    return Machine(bandwidth=bus_gbps * 1e3, rate=tflops * 1e6, comm_share=comm_share)


class Work(NamedTuple):
    "One piece of work on one stream of GPU 0, in µs from the layer's start."
    stream: str         # 'compute' or 'link'
    label: str
    start: float
    end: float


def _multiply_us(machine, m, k, n):
    "One multiply of m x k by k x n on an idle GPU: its launch, then its flops at the machine's rate for that shape."
    rate = machine.rate(m, k, n) if callable(machine.rate) else machine.rate
    return machine.launch_us + 2 * m * k * n / rate


def _check(m, k, n, gpus, chunks):
    for name, v in (('m', m), ('k', k), ('n', n), ('gpus', gpus), ('chunks', chunks)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if gpus < 2: raise ValueError(f"a layer split over GPUs needs at least 2 of them, got {gpus}")
    if m % (gpus * chunks):
        raise ValueError(f"m = {m} must split into {gpus} GPUs x {chunks} chunks of whole rows")


class _Streams:
    "The two streams of one GPU, scheduling work in the order it is added."
    def __init__(self, machine):
        self.machine, self.free, self.work = machine, {'compute': 0.0, 'link': 0.0}, []

    def transfer(self, label, nbytes, after=0.0):
        start = max(self.free['link'], after)
        return self._add('link', label, start, start + self.machine.latency_us + nbytes / self.machine.bandwidth)

    def busy_link(self, t):
        return any(w.stream == 'link' and w.start <= t < w.end for w in self.work)

    def compute(self, label, us, after=0.0):
        "`us`: the work's time on an idle GPU; slowed by comm_share while a transfer already scheduled runs."
        start = t = max(self.free['compute'], after)
        left, share = us, self.machine.comm_share
        while left > 1e-12:                      # step from one edge of a transfer to the next
            edges = sorted({w.start for w in self.work if w.stream == 'link'} |
                           {w.end for w in self.work if w.stream == 'link'})
            nxt = next((e for e in edges if e > t), None)
            speed = (1 - share) if self.busy_link(t) else 1.0
            step = left / speed if nxt is None else min(left / speed, nxt - t)
            left -= step * speed
            t += step
        return self._add('compute', label, start, t)

    def multiply(self, label, m, k, n, after=0.0):
        return self.compute(label, _multiply_us(self.machine, m, k, n), after)

    def _add(self, stream, label, start, end):
        self.free[stream] = end
        self.work.append(Work(stream, label, start, end))
        return end


def column_parallel(m, k, n, gpus, machine, chunks=1, overlap=True, itemsize=2):
    """The Works of GPU 0 for Y = X W, X of m x k all-gathered by rows, W's n columns split over `gpus`: each GPU
    computes Y's m x (n / gpus). Serial (`overlap=False`): the whole all-gather, then one multiply. Overlapped: X's
    rows travel round a ring in `gpus x chunks` chunks, and each is multiplied once it is here (GPU 0's own first)."""
    _check(m, k, n, gpus, chunks)
    if n % gpus: raise ValueError(f"n = {n} must split into {gpus} GPUs' columns")
    s, cols, rows = _Streams(machine), n // gpus, m // (gpus * chunks)
    if not overlap:
        s.transfer('all-gather', (gpus - 1) * (m // gpus) * k * itemsize)
        s.multiply('multiply', m, k, cols, after=s.free['link'])
        return s.work
    landed = [0.0] * chunks                                   # GPU 0's own rows are here from the start
    for hop in range(1, gpus):
        for c in range(chunks):                               # each chunk is passed on once it has arrived
            landed.append(s.transfer(f"rows of GPU {gpus - hop}, chunk {c}", rows * k * itemsize))
    for i, t in enumerate(landed):
        s.multiply(f"multiply chunk {i}", rows, k, cols, after=t)
    return s.work


def row_parallel(m, k, n, gpus, machine, chunks=1, overlap=True, itemsize=2):
    """The Works of GPU 0 for Y = X W, X's k columns and W's k rows split over `gpus`, each GPU keeping m / gpus rows
    of the summed Y (m x n). Serial: one multiply (a partial of all of Y), then the whole reduce-scatter. Overlapped:
    a ring of `gpus - 1` hops; at each, GPU 0 multiplies the rows it passes on next, adds the partial it received,
    and sends the sum (in `chunks` pieces each)."""
    _check(m, k, n, gpus, chunks)
    if k % gpus: raise ValueError(f"k = {k} must split into {gpus} GPUs' columns of X")
    s, kk, rows = _Streams(machine), k // gpus, m // (gpus * chunks)
    chunk_bytes = rows * n * itemsize                          # partial sums travel in the output's dtype
    add_us = 3 * chunk_bytes / machine.memory_bandwidth        # read both, write the sum
    if not overlap:                                            # NCCL's kernel adds as the sums arrive
        s.multiply('multiply', m, kk, n)
        s.transfer('reduce-scatter', (gpus - 1) * (m // gpus) * n * itemsize, after=s.free['compute'])
        return s.work
    arrived = [0.0] * chunks                                   # at the first hop nothing has arrived: no add
    for hop in range(gpus):
        sent = []
        for c in range(chunks):
            done = s.multiply(f"hop {hop}: multiply chunk {c}", rows, kk, n)
            if hop: done = s.compute(f"hop {hop}: add chunk {c}", add_us, after=arrived[c])
            if hop < gpus - 1: sent.append(s.transfer(f"hop {hop}: send chunk {c}", chunk_bytes, after=done))
        arrived = sent            # in the ring, the neighbour's chunk arrives when GPU 0's own leaves its link
    return s.work


def layer_us(work):
    "The layer's time: from its start to the end of its last piece of work."
    return max(w.end for w in work)


def _covered(spans):
    "The length of the union of (start, end) spans."
    total, reach = 0.0, float('-inf')
    for start, end in sorted(spans):
        if end > reach: total, reach = total + end - max(start, reach), end
    return total


def time_by_kind(work):
    """Where a layer's time went on GPU 0 (µs): its multiplies, its publish and barriers (a measured layer's), the
    compute stream idle (waiting for a transfer, or for the CPU), and the link busy; the layer's whole time."""
    compute = [(w.start, w.end) for w in work if w.stream == 'compute']
    return {'layer': layer_us(work), 'multiplies': _covered((w.start, w.end) for w in work if w.stream == 'compute'
                                                            and 'barrier' not in w.label),
            'publish and barriers': _covered((w.start, w.end) for w in work if 'barrier' in w.label),
            'compute idle': layer_us(work) - _covered(compute),
            'transfers': _covered((w.start, w.end) for w in work if w.stream == 'link')}


def one_gpu_us(m, k, n, machine):
    "The same product on one GPU: one multiply, no transfer."
    return _multiply_us(machine, m, k, n)


def scaling_share(work, m, k, n, gpus, machine):
    "Share of linear scaling: the one-GPU time over `gpus` times the layer's (1.0: `gpus` GPUs are `gpus` times faster)."
    return one_gpu_us(m, k, n, machine) / (gpus * layer_us(work))


def best_chunks(layer, m, k, n, gpus, machine, most=16):
    "The chunk count (1 to `most`, dividing m into whole rows) at which the overlapped `layer` is fastest, and its time."
    fits = [c for c in range(1, most + 1) if m % (gpus * c) == 0]
    times = {c: layer_us(layer(m, k, n, gpus, machine, chunks=c)) for c in fits}
    best = min(times, key=times.get)
    return best, times[best]


def draw_layers(layers, title=None):
    """Each of `layers` ({label: [Work]}) as a panel: GPU 0's compute stream above its link, a bar per piece of work,
    on one time axis so the panels compare; a measured layer's (course.tensor_parallel.Timeline) too, its publish
    and barriers in grey. Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    fig, axes = plt.subplots(len(layers), 1, figsize=(11, 1.3 + 1.1 * len(layers)), sharex=True, squeeze=False)
    end = max(layer_us(w) for w in layers.values())
    colours = {'compute': '#4c72b0', 'link': '#dd8452', 'add': '#55a868', 'barrier': '#999999'}
    for ax, (label, work) in zip(axes[:, 0], layers.items()):
        for w in work:
            colour = colours['add'] if 'add' in w.label else colours['barrier'] if 'barrier' in w.label else colours[w.stream]
            ax.barh(1 if w.stream == 'compute' else 0, w.end - w.start, left=w.start, height=0.6, color=colour,
                    edgecolor='white', linewidth=0.6)
        ax.set_yticks([1, 0], ['compute', 'link'])
        ax.set_title(f"{label}: {layer_us(work):,.0f} µs", fontsize=10, loc='left')
        ax.set_xlim(0, end * 1.02)
    axes[-1, 0].set_xlabel('µs from the layer\'s start (GPU 0; every GPU of the ring does the same)')
    kinds = [('multiply', colours['compute']), ('transfer', colours['link']), ('add a received partial', colours['add'])]
    if any('barrier' in w.label for work in layers.values() for w in work):
        kinds.append(('publish, barriers (measured)', colours['barrier']))
    fig.legend(handles=[Patch(color=c, label=l) for l, c in kinds], loc='lower center', ncol=len(kinds), fontsize=9,
               frameon=False)
    if title: fig.suptitle(title, x=0.01, ha='left', fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95 if title else 1))
    return fig

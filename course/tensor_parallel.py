"""Tensor-parallel layers with torch.distributed: the serial way (a collective, then the multiply, or the reverse) and
the overlapped ways (a ring of point-to-point transfers, or copies pulled from the other GPUs' memory, each chunk
multiplied as soon as it is here).

Every function runs in each process of a group (one process per GPU, started by `torchrun`; see course.tp_run) and
takes that process's shards. The same code runs on GPUs with NCCL and on a CPU with gloo (as the tests do).

- `column_parallel_serial(x, w)`: x is this process's m / P rows of X, w its n / P columns of W; returns all m rows of
  X W's columns of this process (all-gather, then one multiply).
- `column_parallel_ring(x, w, chunks)`: the same result; X's rows travel round a ring in P x `chunks` chunks, and each
  is multiplied while the next travels.
- `column_parallel_pull(x, w, shards, chunks, at_once)`: the same result; each GPU's rows sit in memory the others
  can read (`PeerShards`), and each GPU's copy engines pull the others' rows chunk by chunk while it multiplies, one
  peer after another or (`at_once`) from every peer at the same time.
- `row_parallel_serial(x, w)`: x is this process's k / P columns of X (all m rows), w its k / P rows of W; returns
  this process's m / P rows of the summed X W (one multiply, then a reduce-scatter).
- `row_parallel_ring(x, w, chunks)`: the same; each hop multiplies the rows it passes on next, adds the partial sums
  it received, and sends them on.

`matmul` (default torch.matmul) is the multiply each uses, so the course's own kernels can stand in for cuBLAS.
`Timeline` records, on a GPU, when each piece of `column_parallel_pull`'s work ran on which stream (CUDA events), as
course.overlap_model's `Work`, so that a measured layer is drawn the way the model draws its prediction.
"""
import contextlib
import torch
import torch.distributed as dist


def _ring():
    rank, size = dist.get_rank(), dist.get_world_size()
    if size < 2: raise ValueError(f"a ring needs at least 2 processes, this group has {size}")
    return rank, size, (rank + 1) % size, (rank - 1) % size


def _exchange(send, recv, to, frm, stream):
    """Start sending `send` to process `to` and receiving `recv` from `frm`, issued from `stream` (on a GPU a side
    stream: NCCL's own stream then waits only for what that stream holds, not for multiplies queued on the current
    one); returns the works to wait for."""
    with _on(stream):
        return dist.batch_isend_irecv([dist.P2POp(dist.isend, send, to), dist.P2POp(dist.irecv, recv, frm)])


def _on(stream):
    import contextlib
    return torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()


def _side_stream(t):
    "A stream for the transfers where `t` is on a GPU (waiting for the work queued so far), else None."
    if t.device.type != 'cuda': return None
    stream = torch.cuda.Stream(device=t.device)
    stream.wait_stream(torch.cuda.current_stream(t.device))
    return stream


def _wait(works, stream=None):
    "Make `stream` (or the current stream; on a CPU, the caller) wait for the transfers of `works`."
    with _on(stream):
        for work in works: work.wait()


def _multiply_into(out, a, b, matmul):
    "out = a b, written in place where `matmul` is torch.matmul (no copy of the product), else copied."
    if matmul is torch.matmul: torch.matmul(a, b, out=out)
    else: out.copy_(matmul(a, b))


def _split_rows(rows, chunks):
    if chunks < 1 or rows % chunks: raise ValueError(f"{rows} rows do not split into {chunks} chunks of whole rows")
    return rows // chunks


def column_parallel_serial(x, w, matmul=torch.matmul):
    "All of X (all-gathered from every process's rows `x`) times this process's columns `w` of W."
    size = dist.get_world_size()
    gathered = x.new_empty(size * x.shape[0], x.shape[1])
    dist.all_gather_into_tensor(gathered, x.contiguous())
    return matmul(gathered, w)


def column_parallel_ring(x, w, chunks=1, matmul=torch.matmul):
    """As column_parallel_serial, overlapped: X's rows go round a ring, chunk by chunk. At each hop a process passes
    on each chunk it received at the hop before (its own at the first) and multiplies it while the others travel.
    Rows of process q land in rows q of the output."""
    rank, size, to, frm = _ring()
    rows, step = x.shape[0], _split_rows(x.shape[0], chunks)
    out, comm = x.new_empty(size * rows, w.shape[1]), _side_stream(x)
    have, arriving = list(x.contiguous().split(step)), [[] for _ in range(chunks)]
    for hop in range(size):
        owner, last = (rank - hop) % size, hop == size - 1
        nxt = [torch.empty_like(chunk) for chunk in have] if not last else None
        for c in range(chunks):
            _wait(arriving[c], comm)                   # the chunk is here before it is passed on (CPU: we wait)
            sent = _exchange(have[c], nxt[c], to, frm, comm) if not last else []
            if comm is not None: _wait(arriving[c])    # ... and before the current stream multiplies it
            _multiply_into(out[owner * rows + c * step:owner * rows + (c + 1) * step], have[c], w, matmul)
            arriving[c] = sent
        if not last: have = nxt
    return out


def row_parallel_serial(x, w, matmul=torch.matmul):
    "This process's rows of sum over processes of x w: one multiply of all rows, then a reduce-scatter of the sums."
    size = dist.get_world_size()
    partial = matmul(x, w)
    if partial.shape[0] % size: raise ValueError(f"{partial.shape[0]} rows do not split over {size} processes")
    out = partial.new_empty(partial.shape[0] // size, partial.shape[1])
    dist.reduce_scatter_tensor(out, partial.contiguous())
    return out


def row_parallel_ring(x, w, chunks=1, matmul=torch.matmul):
    """As row_parallel_serial, overlapped: at hop h a process multiplies the rows of process (rank - h - 1) mod P
    (chunk by chunk), adds the partial sums of those rows it received, and sends them on; at the last hop the rows
    are its own and the sums are whole. Sums travel in the output's dtype, as in NCCL's reduce-scatter."""
    rank, size, to, frm = _ring()
    if x.shape[0] % size: raise ValueError(f"{x.shape[0]} rows do not split over {size} processes")
    rows = x.shape[0] // size
    step = _split_rows(rows, chunks)
    comm, received, arriving = _side_stream(x), [None] * chunks, [[] for _ in range(chunks)]
    for hop in range(size):
        block, last = (rank - hop - 1) % size, hop == size - 1
        sums = []
        for c in range(chunks):
            first = block * rows + c * step
            ours = matmul(x[first:first + step], w)              # needs nothing that is arriving
            _wait(arriving[c])
            if received[c] is not None: ours += received[c]
            sums.append(ours)
            if not last:
                if comm is not None: comm.wait_stream(torch.cuda.current_stream(x.device))   # the sums are made
                received[c] = torch.empty_like(ours)
                arriving[c] = _exchange(ours, received[c], to, frm, comm)
        if last: return torch.cat(sums) if chunks > 1 else sums[0]


class PeerShards:
    """Every process's rows of X where the other GPUs can read them: torch's symmetric memory maps each GPU's buffer
    into the others' address space, so a GPU pulls a peer's rows with a plain copy, done by its copy engines (DMA),
    with no kernel taking multiprocessors from the multiply. On a CPU (gloo) a stand-in: `publish` all-gathers the
    shards into a list, so that the code that pulls and multiplies runs, and is checked, the same way.

    `publish(x)` puts this process's rows in its buffer and waits until every process has; `done()` waits until
    every process has finished reading, before any buffer is written again."""

    def __init__(self, rows, cols, dtype, device):
        self.rank, self.size, self.device = dist.get_rank(), dist.get_world_size(), torch.device(device)
        self.shape, self.dtype = (rows, cols), dtype
        if self.device.type == 'cuda':
            from torch.distributed._symmetric_memory import empty, rendezvous
            self.mine = empty(self.shape, dtype=dtype, device=self.device)
            self.handle = rendezvous(self.mine, dist.group.WORLD.group_name)
            self.peers = [self.mine if q == self.rank else self.handle.get_buffer(q, self.shape, dtype)
                          for q in range(self.size)]
        else:
            self.handle, self.peers = None, None

    def publish(self, x):
        if tuple(x.shape) != self.shape or x.dtype != self.dtype:
            raise ValueError(f"these shards hold {self.shape} {self.dtype}, got {tuple(x.shape)} {x.dtype}")
        if self.handle is None:
            self.peers = [torch.empty_like(x) for _ in range(self.size)]
            dist.all_gather(self.peers, x.contiguous())
        else:
            self.mine.copy_(x)
            self.handle.barrier()                     # a stream-ordered barrier: every GPU's rows are in place

    def done(self):
        if self.handle is None: dist.barrier()
        else: self.handle.barrier()


class Timeline:
    """CUDA events around each piece of a layer's work, each on the stream that runs it, from an event recorded when
    the Timeline is made (on the current stream: make it just before the call). `work()` waits for the GPU and returns
    [overlap_model.Work] in µs from that start: 'compute' for the current stream, 'link' for the side streams."""
    def __init__(self):
        self.origin, self.pieces = torch.cuda.Event(enable_timing=True), []
        self.origin.record()

    @contextlib.contextmanager
    def piece(self, stream_name, label, stream=None):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with _on(stream):
            start.record()
            yield
            end.record()
        self.pieces.append((stream_name, label, start, end))

    def work(self):
        from .overlap_model import Work
        torch.cuda.synchronize()
        return [Work(name, label, self.origin.elapsed_time(start) * 1e3, self.origin.elapsed_time(end) * 1e3)
                for name, label, start, end in self.pieces]


def _piece(timeline, stream_name, label, stream=None):
    "timeline.piece(...) where there is a timeline, else only the stream (nothing recorded)."
    return timeline.piece(stream_name, label, stream) if timeline is not None else _on(stream)


def column_parallel_pull(x, w, shards, chunks=1, matmul=torch.matmul, at_once=False, timeline=None):
    """As column_parallel_serial, overlapped with copy engines: every process publishes its rows in `shards` (a
    PeerShards), queues the multiply of its own rows, then pulls the others' rows chunk by chunk on a side stream,
    nearest in the ring first, and multiplies each chunk once it has landed. `at_once`: a side stream per
    peer, so that the copies from different peers run at the same time (on more of the GPU's copy engines).
    `timeline` (a Timeline, on a GPU): record when each piece ran."""
    rank, size, _, _ = _ring()
    rows, step = x.shape[0], _split_rows(x.shape[0], chunks)
    with _piece(timeline, 'compute', 'publish and barrier'): shards.publish(x)
    out, gathered = x.new_empty(size * rows, w.shape[1]), x.new_empty(size * rows, x.shape[1])
    streams = [_side_stream(x) for _ in range(size - 1 if at_once else 1)]     # (they wait for the publish only)
    for c in range(chunks):            # its own rows first: the GPU multiplies while the CPU issues the copies
        with _piece(timeline, 'compute', f'multiply rows of GPU {rank}, chunk {c}'):
            _multiply_into(out[rank * rows + c * step:rank * rows + (c + 1) * step], x[c * step:(c + 1) * step], w, matmul)
    landed = {}
    for hop, owner in ((hop, (rank + hop) % size) for hop in range(1, size)):
        comm = streams[(hop - 1) % len(streams)]
        for c in range(chunks):
            first = owner * rows + c * step
            with _piece(timeline, 'link', f'rows of GPU {owner}, chunk {c}', comm):
                gathered[first:first + step].copy_(shards.peers[owner][c * step:(c + 1) * step])
            if comm is not None: landed[first] = torch.cuda.Event(); landed[first].record(comm)
    for owner in ((rank + hop) % size for hop in range(1, size)):
        for c in range(chunks):
            first = owner * rows + c * step
            if first in landed: torch.cuda.current_stream(x.device).wait_event(landed[first])
            with _piece(timeline, 'compute', f'multiply rows of GPU {owner}, chunk {c}'):
                _multiply_into(out[first:first + step], gathered[first:first + step], w, matmul)
    with _piece(timeline, 'compute', 'barrier'): shards.done()
    return out

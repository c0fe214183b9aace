"""Which memory a kernel touches, read from the checking simulator's trace: access maps and coalescing.

The simulator (`course.checked_simulator`) runs a kernel's threads one after another, and its `Trace` keeps
every thread's global and shared accesses in order (`Trace.addresses`). From that record this module

- counts which elements of a matrix one thread, or one block, read and wrote (`accesses`), and draws it
  (`draw_accesses`): the picture of notebooks 01-03;
- puts each warp instruction back together (`warp_accesses`) and counts the 32-byte sectors it touches: the
  model of coalescing of notebook 03 and of the exercise checks (`course/exercises/coalescing.py`), drawn by
  `draw_coalescing`;
- turns the memory counters that Nsight Compute reads into a table (`traffic_table`), for notebook 07's
  measurement of what the L1 and L2 caches serve.

The model of coalescing: a warp is 32 consecutive threads of a block, counted x first (threadIdx.x fastest,
then y), as on a GPU. Its 32 lanes issue each load or store together, and the memory system serves their
addresses in sectors of 32 bytes. 32 neighbouring 4-byte elements fill 4 sectors; 32 elements far apart
touch 32 sectors, eight times the bytes moved for the same bytes used. Sectors are counted from the start
of each buffer, which is where they start on a GPU too (allocations are aligned to 256 bytes)."""
from collections import Counter, defaultdict, namedtuple
from dataclasses import dataclass

WARP_SIZE, SECTOR_BYTES, ELEMENT_BYTES = 32, 32, 4
ELEMENTS_PER_SECTOR = SECTOR_BYTES // ELEMENT_BYTES
# A run of neighbouring elements that does not start on a sector boundary touches one sector more than the
# fewest: 32 floats starting at element 3 touch 5 sectors. Only a warp access beyond that is uncoalesced.
SLACK_SECTORS = 1

# The colours of the pictures: one for a block's cells, one for its chosen thread's, one for used bytes.
BLOCK_COLOUR, THREAD_COLOUR, USED_COLOUR, LANE_COLOUR = 'tab:blue', 'tab:orange', 'tab:orange', 'tab:blue'


# --------------------------------------------------------------------------------------------------
# Access maps: which elements a thread or a block touched
# --------------------------------------------------------------------------------------------------

def accesses(trace, buffer, width, block=None, thread=None, kind=None, space='global'):
    """Counter {(row, col): times} of the accesses to `buffer`, a matrix `width` columns wide stored row by
    row, made by thread `thread` = (x, y) of block `block` = (x, y). With thread None: by every thread of
    the block; with block None too: by every block. `kind` is 'read', 'write' or None for both.

    `set(accesses(...))` is the set of elements touched. A trace of notebook 02's block kernels records each
    block as a whole (they have no threads of their own), so asking it for one thread is an error."""
    block = None if block is None else tuple(block)[:2]
    thread = None if thread is None else tuple(thread)[:2]
    if thread is not None and block is None: raise ValueError("a thread is named within its block: give block= too")
    counts, seen = Counter(), False
    for (b, t), made in trace.addresses.items():
        if block is not None and tuple(b) != block: continue
        if thread is not None:
            if t is None:
                raise ValueError(f"this trace records block (x={block[0]}, y={block[1]}) as a whole (a block kernel has "
                                 "no threads of its own), so it cannot say what one thread did: ask for the block")
            if tuple(t) != thread: continue
        seen = True
        for where, k, name, index in made:
            if where == space and name == buffer and (kind is None or k == kind):
                counts[divmod(index, width)] += 1
    if (block is not None or thread is not None) and not seen:
        raise ValueError(f"the trace has no thread {thread} of block {block}" if thread else
                         f"the trace has no block {block}")
    return counts


def with_x_and_y_swapped(kernel):
    """Notebook 01's kernel(blockIdx, threadIdx, blockDim, ...) run with x and y exchanged in all three, so that
    threadIdx.x runs along the rows instead of the columns. Launch it with the grid swapped to match."""
    from .checked_simulator import dim3
    def swapped(blockIdx, threadIdx, blockDim, *args, **kwargs):
        flip = lambda d: dim3(d.y, d.x, d.z)
        return kernel(flip(blockIdx), flip(threadIdx), flip(blockDim), *args, **kwargs)
    swapped.__name__ = f"{kernel.__name__}_xy_swapped"
    return swapped


def traced_matmul(kernel, h, k, w, block_dim, convention='thread', blocks=None, tw=None, seed=0):
    """Run a matmul kernel of notebooks 01-03 in the checking simulator on random h x k @ k x w inputs; return
    its Trace. `convention` is the kernel's calling convention:

    - 'thread': notebook 01's kernel(blockIdx, threadIdx, blockDim, m, n, out, h, w, k), once per thread;
    - 'block': notebook 02's kernel(blockIdx, blockDim, shared, m, n, out, h, w, k, tw=tw), once per block;
    - 'run_threads': notebook 03's block kernel, whose `run_threads` (a global of the kernel's module) is
      replaced, for the run, by one that records every access under the thread that made it.

    `blocks` defaults to enough blocks of `block_dim` to cover the h x w output (x along its columns). The
    kernel's product is compared with m @ n: a picture drawn from a wrong run would teach a wrong kernel."""
    import torch
    from .checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, traced_run_threads
    gen = torch.Generator().manual_seed(seed)
    m, n = torch.rand(h, k, generator=gen), torch.rand(k, w, generator=gen)
    trace = Trace()
    b = buffers(trace, m=m, n=n, out=torch.zeros(h, w))
    blocks = blocks or dim3(-(-w // block_dim.x), -(-h // block_dim.y))
    args = (b['m'], b['n'], b['out'], h, w, k)
    if convention == 'thread':
        run_grid(kernel, blocks, block_dim, *args, trace=trace)
    elif convention in ('block', 'run_threads'):
        tw = tw or block_dim.x
        names = kernel.__globals__
        old = names.get('run_threads')
        if convention == 'run_threads': names['run_threads'] = traced_run_threads(trace)
        try: run_block_kernels(kernel, blocks, block_dim, 2 * tw * tw, *args, trace=trace, tw=tw)
        finally:
            if convention == 'run_threads': names['run_threads'] = old
    else:
        raise ValueError(f"convention must be 'thread', 'block' or 'run_threads', not {convention!r}")
    got = torch.tensor(b['out'].tolist()).reshape(h, w)
    if not torch.allclose(got, m @ n, rtol=1e-4, atol=1e-4):
        raise RuntimeError(f"{kernel.__name__} computed a wrong product on {h}x{k} @ {k}x{w} in the simulator")
    return trace


def draw_accesses(trace, h, k, w, block, thread=None, title=''):
    """m (h x k), n (k x w) and out (h x w) as grids of elements, marking what block `block` = (x, y) touched,
    and inside it what its thread `thread` = (x, y) touched (thread None: the block only).

    A block's cells are blue, its thread's orange; the darker, the more often that block (or thread) touched
    the element, and the number in a cell says how often the block did. Each patch carries gid 'block' or
    'thread', so what a figure marks can be read back from it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle
    grids = (('m', h, k), ('n', k, w), ('out', h, w))
    fig, axs = plt.subplots(1, 3, figsize=(4.2 * 3, 4.6), gridspec_kw=dict(width_ratios=[k, w, w]))
    label = dict(ha='center', va='center', fontsize=7)
    for ax, (name, rows, cols) in zip(axs, grids):
        by_block = accesses(trace, name, cols, block=block)
        by_thread = accesses(trace, name, cols, block=block, thread=thread) if thread is not None else Counter()
        ax.set_xlim(0, cols); ax.set_ylim(rows, 0); ax.set_aspect('equal')
        ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=6)
        ax.set_yticks([r + 0.5 for r in range(rows)], [str(r) for r in range(rows)], fontsize=6)
        ax.tick_params(length=0, labeltop=True, labelbottom=False)
        for i in range(cols + 1): ax.axvline(i, color='0.75', lw=0.5)
        for i in range(rows + 1): ax.axhline(i, color='0.75', lw=0.5)
        most = max(by_block.values(), default=1)
        for (r, c), times in sorted(by_block.items()):
            ax.add_patch(Rectangle((c, r), 1, 1, color=BLOCK_COLOUR, alpha=0.15 + 0.5 * times / most, lw=0, gid='block'))
            ax.text(c + 0.5, r + 0.5, str(times), **label)
        most = max(by_thread.values(), default=1)
        for (r, c), times in sorted(by_thread.items()):
            ax.add_patch(Rectangle((c + 0.12, r + 0.12), 0.76, 0.76, facecolor=THREAD_COLOUR,
                                   alpha=0.45 + 0.5 * times / most, edgecolor='black', lw=0.8, gid='thread'))
        who = f"thread {sum(by_thread.values())}, " if thread is not None else ''
        ax.set_title(f"{name} ({rows}x{cols})\naccesses: {who}block {sum(by_block.values())}", fontsize=9)
    bx, by = tuple(block)[:2]
    handles = [Patch(color=BLOCK_COLOUR, alpha=0.5,
                     label=f"touched by block (x={bx}, y={by}); the number: how often (darker: more)")]
    if thread is not None:
        handles.append(Patch(facecolor=THREAD_COLOUR, edgecolor='black',
                             label=f"touched by its thread (x={thread[0]}, y={thread[1]}) (darker: more often)"))
    fig.legend(handles=handles, loc='lower center', ncol=len(handles), fontsize=9, frameon=False)
    if title: fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.94 if title else 1))
    return fig


def marked_cells(ax, gid):
    "The (row, col) cells a drawing of `draw_accesses` marks with patches of `gid` ('block' or 'thread') in axes `ax`."
    return {(int(p.get_y()), int(p.get_x())) for p in ax.patches if p.get_gid() == gid}


# --------------------------------------------------------------------------------------------------
# Coalescing: warp instructions and the sectors they touch
# --------------------------------------------------------------------------------------------------

def sector_of(index):
    "The 32-byte sector of a buffer that its 4-byte element `index` lies in."
    return index * ELEMENT_BYTES // SECTOR_BYTES


def sectors_touched(indices):
    "How many 32-byte sectors the 4-byte elements `indices` (one per lane) lie in."
    return len({sector_of(i) for i in indices})


def fewest_sectors(indices):
    "The fewest 32-byte sectors that as many different 4-byte elements as `indices` holds could lie in."
    return -(-len(set(indices)) * ELEMENT_BYTES // SECTOR_BYTES)


@dataclass(frozen=True)
class WarpAccess:
    "One warp instruction: the `nth` access of kind `kind` ('read'/'write') to `buffer` by each lane of a warp."
    block: tuple        # (x, y) of the block
    warp: int           # the warp's number in its block
    kind: str
    buffer: str
    nth: int            # 1 for each lane's first such access, 2 for its second, ...
    lanes: tuple        # ((lane, element index), ...) in lane order; lanes that made no such access are absent
    block_dim: tuple    # (x, y) threads of the block

    @property
    def indices(self): return [i for _, i in self.lanes]

    @property
    def sectors(self): return sectors_touched(self.indices)

    @property
    def fewest(self): return fewest_sectors(self.indices)

    @property
    def coalesced(self): return self.sectors <= self.fewest + SLACK_SECTORS


def warp_accesses(trace, block_dim, space='global'):
    """Every warp instruction of a run of thread kernels (run_grid, run_threaded_blocks, run_threads), as
    WarpAccess, in the order blocks (y, then x), warps, then each lane's accesses."""
    groups, first_seen = defaultdict(dict), {}
    for (block, thread), made in trace.addresses.items():
        if thread is None: continue        # a block kernel of notebook 02: no threads of its own
        warp, lane = divmod(thread[1] * block_dim.x + thread[0], WARP_SIZE)
        count = Counter()
        for position, (where, kind, name, index) in enumerate(made):
            if where != space: continue
            count[(kind, name)] += 1
            key = (block, warp, kind, name, count[(kind, name)])
            groups[key][lane] = index
            first_seen[key] = min(first_seen.get(key, position), position)
    order = sorted(groups, key=lambda k: (k[0][1], k[0][0], k[1], first_seen[k], k[2], k[3]))
    return [WarpAccess(b, w, kind, name, nth, tuple(sorted(groups[(b, w, kind, name, nth)].items())),
                       (block_dim.x, block_dim.y)) for b, w, kind, name, nth in order]


SectorCount = namedtuple('SectorCount', 'instructions sectors fewest')


def sector_counts(trace, block_dim):
    """{(buffer, kind): SectorCount(warp instructions, sectors they touched, fewest sectors their elements fit in)}
    over a whole simulated launch: sectors / instructions is what an average warp access costs."""
    totals = defaultdict(lambda: [0, 0, 0])
    for a in warp_accesses(trace, block_dim):
        t = totals[(a.buffer, a.kind)]
        t[0] += 1; t[1] += a.sectors; t[2] += a.fewest
    return {key: SectorCount(*t) for key, t in totals.items()}


TILE_LAYOUTS = ('side by side', 'spread', 'down')


def tile_load_accesses(tile_cols, width, layout, first_column=0, warp=0):
    """The 4 float-by-float loads (WarpAccess, nth 1 to 4) of warp `warp` when the threads of a block read a tile
    whose rows are `tile_cols` floats long, 4 floats each, from a row-major matrix `width` floats wide, the tile's
    first row at row 0 and first column at `first_column`: `TileInRegisters` of notebook 10, in one of its layouts.

    - 'side by side': `tile_cols / 4` threads a row, thread j of a row reads columns 4j .. 4j+3, one per load, so each
      load's lanes are 4 floats apart;
    - 'spread': the same threads, thread j reads columns j, j + tile_cols/4, ...: each load's lanes read neighbours;
    - 'down': `tile_cols` threads share 4 rows, thread j reads column j of each, one row per load: each load's lanes
      read neighbours too, a whole row of the tile per `tile_cols` lanes."""
    if layout not in TILE_LAYOUTS: raise ValueError(f"layout must be one of {TILE_LAYOUTS}, got {layout!r}")
    if tile_cols % 4 or not 4 <= tile_cols <= 4 * WARP_SIZE * 1024:
        raise ValueError(f"a tile row must be a positive multiple of 4 floats, got {tile_cols}")
    if width < first_column + tile_cols: raise ValueError(f"a tile of {tile_cols} columns at column {first_column} "
                                                         f"does not fit a matrix {width} wide")
    across = tile_cols if layout == 'down' else tile_cols // 4       # threads along one row (down: along 4 rows)
    loads = []
    for load in range(4):
        lanes = []
        for lane in range(WARP_SIZE):
            group, j = divmod(warp * WARP_SIZE + lane, across)
            row, column = {'side by side': (group, 4 * j + load), 'spread': (group, j + load * across),
                           'down': (4 * group + load, j)}[layout]
            lanes.append((lane, row * width + first_column + column))
        loads.append(WarpAccess((0, 0), warp, 'read', 'the tile', load + 1, tuple(lanes), (WARP_SIZE * (warp + 1), 1)))
    return loads


def tile_load_sectors(tile_cols, width, layout, first_column=0, warp=0):
    "The sectors each of the 4 loads of `tile_load_accesses` (same arguments) touches: a list of 4 counts."
    return [a.sectors for a in tile_load_accesses(tile_cols, width, layout, first_column, warp)]


def draw_coalescing(warp_accesses_, titles=None):
    """One panel per warp access: its 32 lanes (top), a line from each lane to the element it touches, and the
    32-byte sectors those elements lie in (bottom), each drawn as its 8 four-byte elements, the used ones
    coloured. Touched sectors that are not neighbours in memory are drawn with a gap between them. Patches
    carry gid 'lane', 'sector' and 'used', so what a panel shows can be read back from it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle
    gap = 3
    fig, axs = plt.subplots(len(warp_accesses_), 1, figsize=(12, 2.5 * len(warp_accesses_)), squeeze=False)
    for ax, access, title in zip(axs[:, 0], warp_accesses_, titles or [None] * len(warp_accesses_)):
        sectors = sorted({sector_of(i) for i in access.indices})
        left, x = {}, 0.0
        for j, s in enumerate(sectors):
            if j and s != sectors[j - 1] + 1:
                ax.text(x + gap / 2, 0.5, '⋯', ha='center', va='center', fontsize=9, color='0.4')
                x += gap
            left[s] = x
            x += ELEMENTS_PER_SECTOR
        width = max(x, WARP_SIZE)
        shift = (width - x) / 2
        used = set(access.indices)
        for s in sectors:
            for e in range(ELEMENTS_PER_SECTOR):
                index = s * ELEMENTS_PER_SECTOR + e
                ax.add_patch(Rectangle((shift + left[s] + e, 0), 1, 1, facecolor=USED_COLOUR if index in used else 'white',
                                       edgecolor='0.8', lw=0.3, gid='used' if index in used else None))
            ax.add_patch(Rectangle((shift + left[s], 0), ELEMENTS_PER_SECTOR, 1, fill=False, edgecolor='black', lw=1.4,
                                   gid='sector'))
        lane_w = width / WARP_SIZE
        for lane, index in access.lanes:
            x0 = lane * lane_w
            ax.add_patch(Rectangle((x0 + 0.1 * lane_w, 3), 0.8 * lane_w, 0.8, color=LANE_COLOUR, alpha=0.7, gid='lane'))
            target = shift + left[sector_of(index)] + index % ELEMENTS_PER_SECTOR + 0.5
            ax.plot([x0 + lane_w / 2, target], [3, 1], color='0.35', lw=0.6)
            if lane % 8 == 0 or lane == WARP_SIZE - 1:
                ax.text(x0 + lane_w / 2, 4.15, str(lane), ha='center', va='bottom', fontsize=7)
        ax.text(-0.01 * width, 3.4, 'lanes', ha='right', va='center', fontsize=8)
        ax.text(-0.01 * width, 0.5, 'memory', ha='right', va='center', fontsize=8)
        ax.set_xlim(-0.02 * width, width * 1.01); ax.set_ylim(-0.3, 4.9); ax.axis('off')
        plural = lambda count, word: f"{count} {word}{'' if count == 1 else 's'}"
        default = (f"warp {access.warp} of block ({access.block[0]}, {access.block[1]}), {access.kind} of "
                   f"{access.buffer}: {plural(len(used), 'different element')} ({len(used) * ELEMENT_BYTES} bytes used) "
                   f"in {plural(access.sectors, 'sector')} ({access.sectors * SECTOR_BYTES} bytes moved)")
        ax.set_title(title + '\n' + default if title else default, fontsize=9)
    fig.legend(handles=[Patch(color=LANE_COLOUR, alpha=0.7, label='a lane (thread) of the warp'),
                        Patch(facecolor=USED_COLOUR, edgecolor='0.8', label='a 4-byte element the warp uses'),
                        Patch(facecolor='white', edgecolor='black', label='a 32-byte sector: moved whole')],
               loc='lower center', ncol=3, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


# --------------------------------------------------------------------------------------------------
# What Nsight Compute says each level of the memory served
# --------------------------------------------------------------------------------------------------

# The counters of notebook 07's measurement, and what each counts.
TRAFFIC_COUNTERS = {
    'gpu__time_duration.sum': 'kernel time (ns)',
    'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum': 'sectors that global loads asked of the L1 cache',
    'lts__t_sectors_srcunit_tex_op_read.sum': 'sectors the L1 cache read from L2',
    'dram__bytes_read.sum': 'bytes L2 read from DRAM (device memory)',
    'smsp__inst_executed.sum': 'instructions (warp instructions)',
    'sm__sass_thread_inst_executed_op_ffma_pred_on.sum': 'FMAs (thread instructions)',
}

Traffic = namedtuple('Traffic', 'asked_gb l1_gb l2_gb dram_gb ms instructions_per_fma')


def traffic(counters, asked_bytes):
    "A Traffic row from ncu's `counters` (TRAFFIC_COUNTERS) and the bytes the kernel's threads load from global memory."
    fma_warp_instructions = counters['sm__sass_thread_inst_executed_op_ffma_pred_on.sum'] / WARP_SIZE
    return Traffic(asked_bytes / 1e9,
                   counters['l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum'] * SECTOR_BYTES / 1e9,
                   counters['lts__t_sectors_srcunit_tex_op_read.sum'] * SECTOR_BYTES / 1e9,
                   counters['dram__bytes_read.sum'] / 1e9,
                   counters['gpu__time_duration.sum'] / 1e6,
                   counters['smsp__inst_executed.sum'] / fma_warp_instructions)


def traffic_table(rows):
    "The lines of a table of {kernel name: Traffic}: gigabytes at each level of the memory, time, instructions per FMA."
    head = (f"{'kernel':30s} {'threads load':>12s} {'L1 serves':>10s} {'L2 serves':>10s} {'DRAM serves':>12s} "
            f"{'time':>8s} {'instr/FMA':>9s}")
    lines = [head]
    for name, t in rows.items():
        lines.append(f"{name:30s} {t.asked_gb:9.2f} GB {t.l1_gb:7.2f} GB {t.l2_gb:7.2f} GB {t.dram_gb:9.3f} GB "
                     f"{t.ms:5.2f} ms {t.instructions_per_fma:9.2f}")
    return lines

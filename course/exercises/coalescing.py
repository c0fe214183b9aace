"""Coalescing, read from the checking simulator's trace: how many 32-byte sectors each warp's access touches.

On a GPU the 32 threads of a warp issue each load or store instruction together, and the memory system
serves the warp's 32 addresses in sectors of 32 bytes. 32 neighbouring 4-byte elements fill 4 sectors;
32 elements far apart touch 32 sectors, eight times the traffic for the same data. That is coalescing.

The simulator runs the threads one after another, but its trace keeps each thread's global accesses in
order (`Trace.addresses`), so each warp instruction can be put back together: the warp of a block is 32
consecutive threads in x-major order (threadIdx.x fastest, as on a GPU), and its j-th read of a buffer is
the j-th read of that buffer by each of its lanes."""
from collections import Counter, defaultdict
from dataclasses import dataclass

WARP_SIZE, SECTOR_BYTES, ELEMENT_BYTES = 32, 32, 4
# A run of neighbouring elements that does not start on a sector boundary touches one sector more than the
# fewest: 32 floats starting at element 3 touch 5 sectors. Only a warp access beyond that is uncoalesced.
SLACK_SECTORS = 1


def ordinal(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


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
    def sectors(self):
        "How many 32-byte sectors the warp's elements lie in."
        return len({i * ELEMENT_BYTES // SECTOR_BYTES for i in self.indices})

    @property
    def fewest(self):
        "The fewest sectors that many different 4-byte elements can lie in."
        return -(-len(set(self.indices)) * ELEMENT_BYTES // SECTOR_BYTES)

    @property
    def coalesced(self): return self.sectors <= self.fewest + SLACK_SECTORS

    def threads(self):
        "The warp's threads, in words: 'threads x=0..31, y=1' for blocks 32 (or a multiple) wide."
        first = self.warp * WARP_SIZE
        bx = self.block_dim[0]
        if bx % WARP_SIZE == 0:
            y, x0 = divmod(first, bx)
            return f"threads x={x0}..{x0 + WARP_SIZE - 1}, y={y}"
        return f"threads {first} to {first + WARP_SIZE - 1} counted x first"

    def spread(self, names=None):
        "How far apart neighbouring lanes' elements are, in words, with sizes named where `names` = {value: 'h'} says."
        names = names or {}
        steps = set()
        for (l1, i1), (l2, i2) in zip(self.lanes, self.lanes[1:]):
            d, rest = divmod(i2 - i1, l2 - l1)
            steps.add(d if rest == 0 else None)
        verb = 'read' if self.kind == 'read' else 'write'
        if len(steps) == 1 and None not in steps:
            d = steps.pop()
            size = f"{names[abs(d)]} = {abs(d)}" if abs(d) in names else f"{abs(d)}"
            return f"neighbouring threads {verb} elements {size} apart"
        widest = max(abs(b - a) for a, b in zip(self.indices, self.indices[1:]))
        return f"neighbouring threads {verb} elements scattered up to {widest} apart"

    def sentence(self, names=None):
        "'warp 0 (threads x=0..31, y=0) of block (x=0, y=0): its 2nd read of m touches 32 sectors of 32 bytes where 4 would do: ...'"
        verb = 'read' if self.kind == 'read' else 'write'
        return (f"warp {self.warp} ({self.threads()}) of block (x={self.block[0]}, y={self.block[1]}): its "
                f"{ordinal(self.nth)} {verb} of {self.buffer} touches {self.sectors} sectors of {SECTOR_BYTES} bytes "
                f"where {self.fewest} would do: {self.spread(names)}")


def warp_accesses(trace, block_dim, space='global'):
    """Every warp instruction of a run of thread kernels (run_grid, run_threaded_blocks, run_threads), as
    WarpAccess, in the order blocks (y, then x), warps, then each lane's accesses."""
    groups, first_seen = defaultdict(dict), {}
    for (block, thread), accesses in trace.addresses.items():
        if thread is None: continue        # a block kernel of notebook 02: no threads of its own
        warp, lane = divmod(thread[1] * block_dim.x + thread[0], WARP_SIZE)
        count = Counter()
        for position, (where, kind, name, index) in enumerate(accesses):
            if where != space: continue
            count[(kind, name)] += 1
            key = (block, warp, kind, name, count[(kind, name)])
            groups[key][lane] = index
            first_seen[key] = min(first_seen.get(key, position), position)
    order = sorted(groups, key=lambda k: (k[0][1], k[0][0], k[1], first_seen[k], k[2], k[3]))
    return [WarpAccess(b, w, kind, name, nth, tuple(sorted(groups[(b, w, kind, name, nth)].items())),
                       (block_dim.x, block_dim.y)) for b, w, kind, name, nth in order]


def uncoalesced(trace, block_dim, buffers=None):
    "The warp accesses (to the named global buffers, or all) that touch more sectors than coalesced ones would."
    return [a for a in warp_accesses(trace, block_dim)
            if not a.coalesced and (buffers is None or a.buffer in buffers)]


def first_uncoalesced(trace, block_dim, names=None, buffers=None):
    "The sentence for the first uncoalesced warp access, or None when every warp access coalesces."
    bad = uncoalesced(trace, block_dim, buffers)
    return bad[0].sentence(names) if bad else None


"""The bank model of course/shared_banks.py applied to the checks of notebook 06's exercises: every warp's
shared-memory accesses in a simulated launch, and the worst bank conflict among them, in a sentence.

A warp is 32 consecutive threads of a block (x fastest, then y), and its j-th shared read (or write) is
the j-th shared read of each of its lanes, from the checking simulator's trace. The simulated buffers
hold 4-byte floats, so an index into the shared buffer is a word: the model's unit."""
from collections import defaultdict
from dataclasses import dataclass

from ..shared_banks import WARP_SIZE, column_ways, conflict_ways   # the bank model itself; column_ways for lesson_06
from .coalescing import ordinal


@dataclass
class WarpAccess:
    "One shared-memory instruction of one warp: the words its lanes touch, and its worst bank."
    block: tuple
    warp: int
    number: int          # the warp's 1st, 2nd, ... shared read (or write)
    kind: str            # 'read' or 'write'
    words: dict          # lane -> word

    @property
    def conflict(self): return conflict_ways(self.words.values())

    def sentence(self):
        "'warp 0 of block (0, 0): its 2nd shared read hits bank 0 in 32 different words (a 32-way conflict)'."
        ways, bank, words = self.conflict
        lanes = sorted(l for l, w in self.words.items() if w in words)
        shown = ', '.join(f"lane {l} word {self.words[l]}" for l in lanes[:3]) + (', ...' if len(lanes) > 3 else '')
        steps = {self.words[b] - self.words[a] for a, b in zip(lanes, lanes[1:])}
        apart = f", {steps.pop()} words apart" if len(steps) == 1 else ''
        return (f"warp {self.warp} of block ({self.block[0]}, {self.block[1]}): its {ordinal(self.number)} shared "
                f"{self.kind} hits bank {bank} in {ways} different words (a {ways}-way conflict: {shown}{apart})")


def warp_accesses(trace, block_dim, kind='read'):
    "Every warp's shared-memory instructions of `kind` in a simulated launch, block by block, warp by warp, in order."
    grouped = defaultdict(dict)
    for (block, thread), accesses in trace.addresses.items():
        if thread is None: continue      # a block kernel of notebook 02: no threads, no warps
        warp, lane = divmod(thread[1] * block_dim.x + thread[0], WARP_SIZE)
        own = [i for space, k, _, i in accesses if space == 'shared' and k == kind]
        for j, word in enumerate(own): grouped[(block, warp, j)][lane] = word
    return [WarpAccess(block, warp, j + 1, kind, words)
            for (block, warp, j), words in sorted(grouped.items(), key=lambda kv: (kv[0][0][::-1], kv[0][1], kv[0][2]))]


def worst_conflict(trace, block_dim, kind='read'):
    "The first of the warp instructions with the most-way bank conflict, or None if no warp touched shared memory."
    found = warp_accesses(trace, block_dim, kind)
    return max(found, key=lambda a: a.conflict[0]) if found else None   # max keeps the first of equals


def stored_rows(trace, block_dim, block):
    """The first words of the rows the warps of `block` store to shared memory: each warp store whose 32 lanes store 32
    neighbouring words, lane i the i-th (a row of a tile, as a coalesced load stores it), sorted, each once."""
    return sorted({a.words[0] for a in warp_accesses(trace, block_dim, 'write') if a.block == block and
                   sorted(a.words) == list(range(WARP_SIZE)) and all(a.words[l] == a.words[0] + l for l in a.words)})

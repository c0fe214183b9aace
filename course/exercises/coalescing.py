"""Coalescing in the exercise checks: the sentence that names a warp access touching too many sectors.

The model itself, how many 32-byte sectors each warp instruction of a simulated launch touches, is the one
notebook 03 teaches, in `course/memory_access.py` (`warp_accesses`, `WarpAccess.sectors`, `WarpAccess.fewest`).
Here it is turned into verdicts: which warp accesses are uncoalesced, and a sentence for the first of them."""
from ..memory_access import SECTOR_BYTES, WARP_SIZE, WarpAccess, warp_accesses   # noqa: F401 (WarpAccess: for readers)


def ordinal(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def threads_in_words(access):
    "A warp's threads, in words: 'threads x=0..31, y=1' for blocks 32 (or a multiple) wide."
    first = access.warp * WARP_SIZE
    bx = access.block_dim[0]
    if bx % WARP_SIZE == 0:
        y, x0 = divmod(first, bx)
        return f"threads x={x0}..{x0 + WARP_SIZE - 1}, y={y}"
    return f"threads {first} to {first + WARP_SIZE - 1} counted x first"


def spread(access, names=None):
    "How far apart neighbouring lanes' elements are, in words, with sizes named where `names` = {value: 'h'} says."
    names = names or {}
    steps = set()
    for (l1, i1), (l2, i2) in zip(access.lanes, access.lanes[1:]):
        d, rest = divmod(i2 - i1, l2 - l1)
        steps.add(d if rest == 0 else None)
    verb = 'read' if access.kind == 'read' else 'write'
    if len(steps) == 1 and None not in steps:
        d = steps.pop()
        size = f"{names[abs(d)]} = {abs(d)}" if abs(d) in names else f"{abs(d)}"
        return f"neighbouring threads {verb} elements {size} apart"
    widest = max(abs(b - a) for a, b in zip(access.indices, access.indices[1:]))
    return f"neighbouring threads {verb} elements scattered up to {widest} apart"


def sentence(access, names=None):
    "'warp 0 (threads x=0..31, y=0) of block (x=0, y=0): its 2nd read of m touches 32 sectors of 32 bytes where 4 would do: ...'"
    verb = 'read' if access.kind == 'read' else 'write'
    return (f"warp {access.warp} ({threads_in_words(access)}) of block (x={access.block[0]}, y={access.block[1]}): its "
            f"{ordinal(access.nth)} {verb} of {access.buffer} touches {access.sectors} sectors of {SECTOR_BYTES} bytes "
            f"where {access.fewest} would do: {spread(access, names)}")


def uncoalesced(trace, block_dim, buffers=None):
    "The warp accesses (to the named global buffers, or all) that touch more sectors than coalesced ones would."
    return [a for a in warp_accesses(trace, block_dim)
            if not a.coalesced and (buffers is None or a.buffer in buffers)]


def first_uncoalesced(trace, block_dim, names=None, buffers=None):
    "The sentence for the first uncoalesced warp access, or None when every warp access coalesces."
    bad = uncoalesced(trace, block_dim, buffers)
    return sentence(bad[0], names) if bad else None

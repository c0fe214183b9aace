"""An event model of one block of notebook 10's `warptiled` kernel: when its tiles are loaded, stored, multiplied.

The block walks K in `tiles` tiles. For each tile, its threads load the tile from global memory into registers
(`load`: a latency, the data arrive `load` units after the loads are issued), store the registers into shared
memory (`store`), and multiply it (`math`); `__syncthreads` barriers (`barrier`) keep a buffer from being
overwritten while others still read it. Times are abstract units; the defaults make a global load's latency
close to one tile's math, as it is for the kernel's 128 x 128 x 16 tiles.

The model follows the kernel's loop:

- `stages=1` (one buffer): load 0, store, barrier; then for every tile t: math t, and unless t is the last,
  barrier (everyone has read the buffer), load t+1, store; then barrier. Nothing overlaps: while loads are in
  flight the block does no math, and while it multiplies no load is in flight.
- `stages=2` (two buffers): load 0, store, barrier; then for every tile t: issue load t+1 (unless t is the
  last), math t while that load is in flight, store t+1 into the other buffer as soon as both the math and
  the data are there, barrier. One barrier per tile, and the load's latency hides behind the math.

With `load=0` the two differ only by the barriers: one buffer pays one more barrier for every tile but the
last, so `total(stages=1) - total(stages=2) == (tiles - 1) * barrier`.

What the model leaves out: the other blocks on the same multiprocessor. With two or more blocks per
multiprocessor, one block's math can fill another's wait, which hides the latency without a second buffer.
"""
from typing import NamedTuple

KINDS = ('load', 'store', 'math', 'barrier')
# Defaults for the picture: a load's latency a bit under one tile's math, stores and barriers short.
LOAD, MATH, STORE, BARRIER = 3.0, 4.0, 0.6, 0.3


class Event(NamedTuple):
    what: str       # one of KINDS
    tile: int       # the tile it is for; a barrier: the tile the block multiplies next (`tiles` after the last)
    start: float
    end: float


class Timeline(NamedTuple):
    events: list
    total: float    # when the block's last event ends


def timeline(tiles, load=LOAD, math=MATH, stages=2, store=STORE, barrier=BARRIER):
    """The events of one block that multiplies `tiles` tiles, with one buffer (`stages=1`) or two (`stages=2`),
    in the order the kernel issues them. A 'load' event lasts from the issue of a tile's global loads until
    its data are in registers (the threads may do other work meanwhile); the others keep the threads busy."""
    if stages not in (1, 2):
        raise ValueError(f"stages must be 1 or 2, not {stages}")
    if tiles < 1:
        raise ValueError(f"tiles must be at least 1, not {tiles}")
    events = []

    def add(what, tile, start, length):
        events.append(Event(what, tile, start, start + length))
        return start + length

    # prologue: tile 0 into buffer 0
    now = add('load', 0, 0.0, load)
    now = add('store', 0, now, store)
    now = add('barrier', 0, now, barrier)
    for t in range(tiles):
        last = t + 1 == tiles
        if stages == 1:
            now = add('math', t, now, math)
            if not last:
                now = add('barrier', t + 1, now, barrier)
                now = add('load', t + 1, now, load)
                now = add('store', t + 1, now, store)
        else:
            loaded = add('load', t + 1, now, load) if not last else now   # in flight during the math
            now = add('math', t, now, math)
            if not last:
                now = add('store', t + 1, max(now, loaded), store)
        now = add('barrier', t + 1, now, barrier)
    return Timeline(events, now)

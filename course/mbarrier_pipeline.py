"""A model of Hopper's mbarrier, and of the producer/consumer pipeline that TMA copies and wgmma build on it.

An **mbarrier** is an 8-byte object in shared memory (PTX ISA: the `mbarrier` instructions). It completes one
*phase* after another. A phase expects a fixed number of arrivals (set at `init`) and, from `expect_tx`, a number
of bytes of asynchronous copies: each `arrive` counts down the arrivals, each completed TMA copy counts down its
bytes (its *transaction count*), and when both are zero the phase completes. The barrier then starts the next
phase with the same arrival count. A thread waits for a phase by its **parity**, 0 or 1 (`try_wait.parity`): the
wait returns once the phase of that parity has completed, that is, once the barrier's current phase has the
other parity. A fresh barrier is in phase 0, so a wait on parity 1 returns at once (as if a phase before it had
completed): the trick that lets a producer start without waiting for consumers that have not consumed anything.

A **pipeline** of STAGES shared-memory buffers uses two barriers per stage:

- `full[s]` (1 arrival: the producer's `arrive.expect_tx`, plus the tile's bytes): the copy into stage s landed;
- `empty[s]` (one arrival per consumer): every consumer is done reading stage s.

The producer, for tile t in stage s = t % STAGES, round n = t // STAGES, waits on `empty[s]` with parity
(n & 1) ^ 1, arrives on `full[s]` expecting the tile's bytes and issues the copy. Each consumer waits on `full[s]`
with parity n & 1, multiplies, and arrives on `empty[s]`. A tile of C takes `k_tiles` of those tiles of K; at its
end each consumer stores its results (`epilogue` units), during which it multiplies nothing, or, with `overlap`,
keeps them and stores them while the next tile's first stages multiply, paying only `pack` units (converting its
results to the form they are stored in). `simulate` runs that protocol in time; a protocol that
cannot finish (wrong parity, wrong byte count, a missing arrival) raises `PipelineStuck` with what each party
waits for, as the GPU would hang. Times are abstract units.
"""
from typing import NamedTuple


class MBarrier:
    "One mbarrier: the arrivals and the bytes its current phase still waits for, and how many phases completed."

    def __init__(self, arrivals, name='barrier'):
        if arrivals < 1: raise ValueError(f"{name}: an mbarrier expects at least 1 arrival per phase, not {arrivals}")
        self.arrivals, self.name = arrivals, name
        self.pending, self.tx, self.completed = arrivals, 0, 0

    @property
    def parity(self):
        "The parity of the current (not yet completed) phase."
        return self.completed & 1

    def arrive(self):
        if self.pending == 0:
            raise RuntimeError(f"{self.name}: one arrival too many in phase {self.completed}")
        self.pending -= 1
        self._complete_if_done()

    def arrive_expect_tx(self, nbytes):
        "`mbarrier.arrive.expect_tx`: raise the phase's transaction count by nbytes, then arrive."
        self.tx += nbytes
        self.arrive()

    def complete_tx(self, nbytes):
        "A copy that signals this barrier (TMA's `.mbarrier::complete_tx::bytes`) delivered nbytes."
        self.tx -= nbytes
        if self.tx < 0 and self.pending == 0:
            raise RuntimeError(f"{self.name}: {-self.tx} bytes more arrived than phase {self.completed} expected")
        self._complete_if_done()

    def _complete_if_done(self):
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.arrivals

    def done(self, parity):
        "`try_wait.parity`: has the phase of this parity completed (is the current phase of the other parity)?"
        return self.parity != parity

    def state(self):
        return (f"{self.name} in phase {self.completed} (parity {self.parity}): {self.pending} of {self.arrivals} "
                f"arrivals and {self.tx} bytes still to come")


class Event(NamedTuple):
    who: str        # 'producer', 'copy' (the TMA engine) or 'consumer 0', 'consumer 1', ...
    what: str       # 'issue', 'copy', 'math' or 'wait'
    tile: int
    start: float
    end: float


class Run(NamedTuple):
    events: list
    total: float


class PipelineStuck(RuntimeError):
    "The protocol cannot go on: every party waits for a phase that will never complete."


class PipelineRace(RuntimeError):
    "A party went ahead too early: a consumer read a stage before its bytes landed, or a copy overwrote a stage still read."


def producer_parity(round_):
    "The parity the producer waits for on `empty[s]` in round n of stage s: the phase before the consumers' n-th."
    return (round_ & 1) ^ 1


def consumer_parity(round_):
    "The parity a consumer waits for on `full[s]` in round n of stage s."
    return round_ & 1


def simulate(tiles, stages=3, consumers=2, tile_bytes=32768, expect_bytes=None, latency=6.0, copy=1.0, math=4.0,
             issue=0.5, producer_wait=producer_parity, consumer_wait=consumer_parity, k_tiles=None, epilogue=0.0,
             overlap=False, pack=0.5):
    """Run the pipeline over `tiles` tiles of K: a producer that issues one TMA copy per tile (`issue` units of its
    time; the bytes land `latency` + `copy` later), `consumers` that each spend `math` units on a tile. The producer
    declares `expect_bytes` per tile (default: `tile_bytes`, what the copy brings). `producer_wait(n)` and
    `consumer_wait(n)` give the parities they wait for in round n (defaults: the right ones). Returns the Run;
    raises PipelineStuck where the protocol cannot finish, and PipelineRace where a wait let a party through too
    early (on a GPU: a wrong answer, not a hang). Tiles of C: every `k_tiles` tiles of K (default: all of them, one
    tile of C), each ended by its `epilogue`: a 'store' event that holds the consumer, or with `overlap` a 'pack' that
    holds it and a 'hidden store' that does not (except after the last tile of C, which has nothing to hide under)."""
    if stages < 1 or tiles < 1 or consumers < 1:
        raise ValueError(f"stages, tiles and consumers must be at least 1, got {stages}, {tiles}, {consumers}")
    k_tiles = tiles if k_tiles is None else k_tiles
    if k_tiles < 1 or tiles % k_tiles:
        raise ValueError(f"k_tiles must divide tiles ({tiles}) into whole tiles of C, got {k_tiles}")
    expect_bytes = tile_bytes if expect_bytes is None else expect_bytes
    full = [MBarrier(1, f'full[{s}]') for s in range(stages)]
    empty = [MBarrier(consumers, f'empty[{s}]') for s in range(stages)]
    events, landing = [], []           # landing: (time, tile) of the copies in flight
    landed, read = set(), {}           # tiles whose bytes landed; tile -> consumers done reading it
    # each party: [next tile, time it is free, time it started waiting (or None)]
    parties = {'producer': [0, 0.0, None], **{f'consumer {c}': [0, 0.0, None] for c in range(consumers)}}

    def waits_on(who, t):
        s, n = t % stages, t // stages
        return (empty[s], producer_wait(n)) if who == 'producer' else (full[s], consumer_wait(n))

    def step(who, now):
        "Let `who` act at time `now` if its barrier lets it; return whether it did."
        t, free, waiting = parties[who]
        if t >= tiles or free > now: return False
        barrier, parity = waits_on(who, t)
        if not barrier.done(parity):
            if waiting is None: parties[who][2] = now
            return False
        if waiting is not None and now > waiting: events.append(Event(who, 'wait', t, waiting, now))
        s = t % stages
        if who == 'producer':
            if t >= stages and read.get(t - stages, 0) < consumers:
                raise PipelineRace(f"the producer overwrote stage {s} with tile {t} while tile {t - stages} was still "
                                   f"being read there ({read.get(t - stages, 0)} of {consumers} consumers done): its wait "
                                   f"on {empty[s].name} for parity {producer_wait(t // stages)} let it through too early")
            full[s].arrive_expect_tx(expect_bytes)
            events.append(Event(who, 'issue', t, now, now + issue))
            events.append(Event('copy', 'copy', t, now + issue + latency, now + issue + latency + copy))
            landing.append((now + issue + latency + copy, t))
            parties[who] = [t + 1, now + issue, None]
        else:
            if t not in landed:
                raise PipelineRace(f"{who} read stage {s} for tile {t} before its bytes landed: its wait on {full[s].name} "
                                   f"for parity {consumer_wait(t // stages)} let it through too early")
            events.append(Event(who, 'math', t, now, now + math))
            free = now + math
            if (t + 1) % k_tiles == 0 and epilogue > 0:                 # the last stage of a tile of C: its results
                c_tile, last = t // k_tiles, t + 1 == tiles
                if overlap and not last:
                    events.append(Event(who, 'pack', c_tile, free, free + pack))
                    events.append(Event(who, 'hidden store', c_tile, free + pack, free + pack + epilogue))
                    free += pack
                else:
                    events.append(Event(who, 'store', c_tile, free, free + epilogue))
                    free += epilogue
            parties[who] = [t + 1, free, None]
            pending_arrivals.append((now + math, t))
        return True

    pending_arrivals = []              # consumers arrive on empty[s] when their math ends
    now = 0.0
    while any(p[0] < tiles for p in parties.values()) or landing or pending_arrivals:
        for when, tile in [x for x in landing if x[0] <= now]:
            landing.remove((when, tile))
            landed.add(tile)
            full[tile % stages].complete_tx(tile_bytes)
        for when, tile in [x for x in pending_arrivals if x[0] <= now]:
            pending_arrivals.remove((when, tile))
            read[tile] = read.get(tile, 0) + 1
            empty[tile % stages].arrive()
        while any(step(who, now) for who in parties): pass
        later = [w for w, _ in landing] + [w for w, _ in pending_arrivals] + \
                [p[1] for p in parties.values() if p[0] < tiles and p[1] > now]
        if not later:
            if any(p[0] < tiles for p in parties.values()):
                raise PipelineStuck(stuck_sentence(parties, waits_on, tiles))
            break
        now = min(later)
    total = max([e.end for e in events] + [0.0])
    return Run(sorted(events, key=lambda e: (e.start, e.who)), total)


def stuck_sentence(parties, waits_on, tiles):
    "What each unfinished party waits for, and the state of that barrier."
    lines = []
    for who, (t, _, _) in parties.items():
        if t >= tiles: continue
        barrier, parity = waits_on(who, t)
        lines.append(f"{who}, at tile {t}, waits for the phase of parity {parity} of {barrier.state()}")
    return "the pipeline is stuck (on a GPU: a hang): " + "; ".join(lines)


EVENT_STYLE = {'issue': dict(color='#1f77b4', label='producer: issue a TMA copy'),
               'copy': dict(color='#ff7f0e', label='TMA: bytes land in shared memory'),
               'math': dict(color='#2ca02c', label='consumer: wgmma on the stage'),
               'wait': dict(color='#d3d3d3', label='waiting on an mbarrier'),
               'store': dict(color='#9467bd', label="consumer: store a tile of C's results"),
               'pack': dict(color='#e377c2', label='consumer: pack results to bf16 (step 7)'),
               'hidden store': dict(color='#9467bd', label="consumer: store them under the next tile's wgmmas")}
THIN = {'hidden store'}       # drawn as a thin bar under the consumer's row: the consumer is not held by it


def tile_labels(events, min_gap):
    """Where draw_pipeline writes tile numbers in one row: [(x, text, kind)], one per bar of at least 0.8 units (waits and
    thin bars get none), except that bars of one kind whose centres lie less than `min_gap` apart (copies issued one right
    after another, which overlap in time) share one label, their first and last tile ('0-2') at the group's centre."""
    bars = sorted((e for e in events if e.what not in ('wait', *THIN) and e.end - e.start >= 0.8),
                  key=lambda e: (e.start + e.end) / 2)
    groups = []
    for e in bars:
        last = groups[-1][-1] if groups else None
        if last is not None and last.what == e.what and (e.start + e.end - last.start - last.end) / 2 < min_gap:
            groups[-1].append(e)
        else:
            groups.append([e])
    labels = []
    for group in groups:
        start, end = min(e.start for e in group), max(e.end for e in group)
        tiles = [e.tile for e in group]
        text = str(tiles[0]) if len(group) == 1 else f"{min(tiles)}-{max(tiles)}"
        labels.append(((start + end) / 2, text, group[0].what))
    return labels


def draw_pipeline(run, title=None, row_names=None, event_labels=None, xmax=None):
    """The Run as a timeline: a row per party (producer, the copies, each consumer), bars per event labelled with
    their tile (of K; a store's, of C; bars too close to label apart share a label, `tile_labels`); each bar carries the
    gid 'who:what:tile' so that what is drawn can be read back. A hidden store is a thin bar under its consumer's row.
    The same protocol describes other pipelines (notebook 12's cp.async stages): `row_names` ({party: label}) and
    `event_labels` ({event kind, a key of EVENT_STYLE: legend label}) rename what is drawn, and `xmax` sets the time
    axis's end (to draw several runs on one scale)."""
    unknown = set(event_labels or ()) - set(EVENT_STYLE)
    if unknown: raise ValueError(f"event_labels: no event kind {sorted(unknown)}; the kinds are {sorted(EVENT_STYLE)}")
    import matplotlib.pyplot as plt
    rows = ['producer', 'copy'] + sorted({e.who for e in run.events if e.who.startswith('consumer')})
    fig, ax = plt.subplots(figsize=(11, 0.7 * len(rows) + 1.4))
    seen = set()
    for e in run.events:
        y = len(rows) - 1 - rows.index(e.who)
        style = dict(EVENT_STYLE[e.what])
        label = style.pop('label')
        label = (event_labels or {}).get(e.what, label)
        thin = e.what in THIN
        bar = ax.barh(y - 0.38 if thin else y, e.end - e.start, left=e.start, height=0.14 if thin else 0.6,
                      edgecolor='w', linewidth=0 if thin else 0.8,
                      label=None if e.what in seen else label, **style)
        seen.add(e.what)
        bar.patches[0].set_gid(f'{e.who}:{e.what}:{e.tile}')
    end = (xmax or run.total) * 1.02
    for who in rows:                      # a label's digits take about 2.5% of the axis: closer bars share one
        y = len(rows) - 1 - rows.index(who)
        for x, text, what in tile_labels([e for e in run.events if e.who == who], 0.025 * end):
            ax.text(x, y, text, ha='center', va='center', fontsize=8, color='w' if what in ('math', 'store') else 'k')
    names = {'copy': 'TMA (bytes landing)', **(row_names or {})}
    ax.set_yticks(range(len(rows)), [names.get(r, r) for r in reversed(rows)])
    ax.set_xlim(0, end)
    stores = any(e.what in ('store', 'pack', 'hidden store') for e in run.events)
    ax.set_xlabel("time (abstract units); the number on a bar is its tile of K" + (" (on a store, its tile of C)" if stores else ""))
    ax.set_title(title or f"{run.total:.1f} units")
    ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig

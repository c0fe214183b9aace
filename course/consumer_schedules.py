"""Two ways for two consumer warpgroups to share a multiprocessor's tensor cores (notebook 14's step 10), as a timeline.

- **Cooperative** (notebook 13's steps 3 to 9): both consumers work on one tile of 128 rows, 64 rows each. Every stage
  feeds both, so the tensor cores run two consumers' wgmmas per stage; at the tile's end both consumers convert their
  sums to bf16 (`pack`) and store them, and the tensor cores wait for the next tile's first wgmmas. With step 7's
  overlap the stores run under the next tile's wgmmas, so only `pack` is left between tiles.
- **Ping-pong** (CUTLASS's name for it): each consumer owns whole tiles of 64 rows, and they take turns. While one
  packs and stores its tile, the other's wgmmas keep the tensor cores busy; a consumer starts its next tile once its
  stores are issued and the other's wgmmas are all issued.

`schedule(name, tiles, k_stages, ...)` plays one multiprocessor's share out in time: `tiles` tiles of 128 rows (the
ping-pong cuts each into two of 64), `k_stages` stages of K each, a stage of one consumer's 64 rows costing `stage` on
the tensor cores; `pack` and `store` are a consumer's own time after a tile. It returns a
course.mbarrier_pipeline.Run (events of 'tensor cores', 'consumer 0' and 'consumer 1') that `draw_schedules` draws and
`busy_share` reads. What it leaves out: the copies (it assumes the producer is always ahead), and that a ping-pong
tile of 64 rows needs B's whole tile for half the multiplies (the bytes per multiply that notebook 14 counts).
"""
from .mbarrier_pipeline import Event, Run

SCHEDULES = ('cooperative', 'ping-pong')
LABELS = {'math': 'wgmmas running', 'pack': 'pack sums to bf16', 'store': 'store (holds the consumer)',
          'hidden store': "store under the next tile's wgmmas", 'wait': 'wait for its turn'}


def schedule(name, tiles=3, k_stages=4, stage=1.0, pack=0.5, store=2.0, overlap=True):
    """The Run of schedule `name` ('cooperative' or 'ping-pong') over `tiles` tiles of 128 rows of `k_stages` stages
    each. `overlap` (cooperative only: ping-pong needs no such step) hides each tile's stores but the last's under the
    next tile's wgmmas."""
    if name not in SCHEDULES: raise ValueError(f"schedule must be one of {SCHEDULES}, got {name!r}")
    if tiles < 1 or k_stages < 1: raise ValueError(f"tiles and k_stages must be at least 1, got {tiles} and {k_stages}")
    if min(stage, pack, store) < 0: raise ValueError("stage, pack and store are times: none may be negative")
    events = []
    if name == 'cooperative':
        now = 0.0
        for t in range(tiles):
            end = now + 2 * k_stages * stage                     # both consumers' wgmmas, one after the other
            events.append(Event('tensor cores', 'math', t, now, end))
            last = t == tiles - 1
            for c in (0, 1):
                events.append(Event(f'consumer {c}', 'math', t, now, end))
                events.append(Event(f'consumer {c}', 'pack', t, end, end + pack))
                if overlap and not last: events.append(Event(f'consumer {c}', 'hidden store', t, end + pack, end + pack + store))
                else: events.append(Event(f'consumer {c}', 'store', t, end + pack, end + pack + store))
            now = end + pack + (0 if overlap and not last else store)
        return Run(events, max(e.end for e in events))
    free, cores = [0.0, 0.0], 0.0                                # when each consumer, and the tensor cores, are free
    for t in range(2 * tiles):                                   # tiles of 64 rows, taken in turn
        c = t % 2
        start = max(free[c], cores)
        if start > free[c] and t > 1: events.append(Event(f'consumer {c}', 'wait', t, free[c], start))
        end = start + k_stages * stage
        events.append(Event('tensor cores', 'math', t, start, end))
        events.append(Event(f'consumer {c}', 'math', t, start, end))
        events.append(Event(f'consumer {c}', 'pack', t, end, end + pack))
        events.append(Event(f'consumer {c}', 'store', t, end + pack, end + pack + store))
        free[c], cores = end + pack + store, end
    return Run(events, max(e.end for e in events))


def busy_share(run):
    "The share of the run's time the tensor cores are busy."
    return sum(e.end - e.start for e in run.events if e.who == 'tensor cores') / run.total


def draw_schedules(tiles=3, k_stages=4, stage=1.0, pack=0.5, store=2.0):
    """Cooperative (with step 7's overlap) above ping-pong, on one time axis: a row for the tensor cores and one per
    consumer, bars numbered by tile of C (128 rows cooperative, 64 ping-pong)."""
    import matplotlib.pyplot as plt
    from .mbarrier_pipeline import EVENT_STYLE, THIN
    runs = {name: schedule(name, tiles, k_stages, stage, pack, store) for name in SCHEDULES}
    end = 1.02 * max(run.total for run in runs.values())
    rows = ['tensor cores', 'consumer 0', 'consumer 1']
    fig, axes = plt.subplots(2, 1, figsize=(11, 4.6), sharex=True)
    seen = set()
    for ax, (name, run) in zip(axes, runs.items()):
        for e in run.events:
            y = len(rows) - 1 - rows.index(e.who)
            style = dict(EVENT_STYLE[e.what])
            style.pop('label')
            label = LABELS[e.what]
            thin = e.what in THIN
            bar = ax.barh(y - 0.38 if thin else y, e.end - e.start, left=e.start, height=0.14 if thin else 0.6,
                          edgecolor='w', linewidth=0 if thin else 0.8, label=None if e.what in seen else label, **style)
            bar.patches[0].set_gid(f'{name}:{e.who}:{e.what}:{e.tile}')
            seen.add(e.what)
            if e.what == 'math' and e.end - e.start >= 0.8:
                ax.text((e.start + e.end) / 2, y, str(e.tile), ha='center', va='center', fontsize=8, color='w')
        ax.set_yticks(range(len(rows)), list(reversed(rows)))
        ax.set_title(f"{name}: {run.total:.1f} units, tensor cores busy {busy_share(run):.0%}", fontsize=10)
    axes[-1].set_xlim(0, end)
    axes[-1].set_xlabel("time (units: one consumer's stage of wgmmas); a bar's number is its tile of C")
    fig.legend(loc='lower center', ncol=len(seen), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig

"""Why a tiled kernel needs a second barrier, as a timeline of two threads of one block (notebook 04's race lab).

Each thread runs the phases of the tiled kernel: it loads its element of the shared tiles, waits at the first
barrier (every element of the tiles is loaded), multiplies from the tiles, and, with the second barrier, waits there
until every thread is done reading before the next phase loads over the tiles. One thread is late to its products,
as a warp the GPU happened to schedule last. `schedule` computes when each thread does what, barriers releasing when
the last thread arrives; `races` finds where one thread writes the tiles while another still reads them; `draw_race`
draws both, with and without the second barrier.
"""
from typing import NamedTuple

LOAD, MULTIPLY = 1.0, 2.0          # time units: loading one's element of the tiles, the products of one phase


class Span(NamedTuple):
    thread: int
    phase: int
    what: str           # 'load' (writes the tiles), 'multiply' (reads them), 'wait' (at a barrier), 'late'
    start: float
    end: float


def schedule(second_barrier, threads=2, phases=2, late=1, delay=1.5):
    """[Span, ...] of `threads` threads running `phases` phases; thread `late` starts its products `delay` later
    than the others in each phase (the runner's late_thread_delay)."""
    spans, at = [], [0.0] * threads
    for p in range(phases):
        for t in range(threads):
            spans.append(Span(t, p, 'load', at[t], at[t] + LOAD))
            at[t] += LOAD
        release = max(at)                                   # the first barrier: all tiles loaded
        for t in range(threads):
            if at[t] < release: spans.append(Span(t, p, 'wait', at[t], release))
            at[t] = release
        for t in range(threads):
            if t == late and delay:
                spans.append(Span(t, p, 'late', at[t], at[t] + delay))
                at[t] += delay
            spans.append(Span(t, p, 'multiply', at[t], at[t] + MULTIPLY))
            at[t] += MULTIPLY
        if second_barrier:                                  # everyone has read the tiles before anyone refills them
            release = max(at)
            for t in range(threads):
                if at[t] < release: spans.append(Span(t, p, 'wait', at[t], release))
                at[t] = release
    return spans


def races(spans):
    """[(writer's load Span, reader's multiply Span)]: a thread loads phase p + 1's tiles over the shared tiles while
    another is still multiplying from phase p's."""
    loads = [s for s in spans if s.what == 'load']
    reads = [s for s in spans if s.what == 'multiply']
    return [(w, r) for w in loads for r in reads
            if w.thread != r.thread and w.phase == r.phase + 1 and w.start < r.end and r.start < w.end]


def draw_race(threads=2, phases=2, late=1, delay=1.5):
    "Two timelines of the same threads, without and with the second barrier; the race windows hatched in red."
    import matplotlib.pyplot as plt
    colours = {'load': '#4c72b0', 'multiply': '#55a868', 'wait': '0.85', 'late': '#f2d27e'}
    fig, axes = plt.subplots(2, 1, figsize=(10, 1.2 + 0.9 * threads * 2), sharex=True)
    for ax, second in zip(axes, (False, True)):
        spans = schedule(second, threads, phases, late, delay)
        for s in spans:
            ax.barh(s.thread, s.end - s.start, left=s.start, color=colours[s.what], edgecolor='black', linewidth=0.4)
            if s.what in ('load', 'multiply'):
                ax.text((s.start + s.end) / 2, s.thread, f"{s.what} {s.phase}", ha='center', va='center', fontsize=9,
                        color='white')
        for w, r in races(spans):
            lo, hi = max(w.start, r.start), min(w.end, r.end)
            ax.axvspan(lo, hi, color='red', alpha=0.25, hatch='//')
            ax.annotate(f"thread {w.thread} loads phase {w.phase}'s tiles over those thread {r.thread} still reads",
                        xy=((lo + hi) / 2, -0.45), xytext=(hi + 0.4, -0.85), fontsize=9, color='darkred', va='center',
                        arrowprops=dict(arrowstyle='->', color='darkred'))
        ax.set_yticks(range(threads), [f"thread {t}" + (" (late)" if t == late else "") for t in range(threads)])
        ax.set_ylim(threads - 0.5, -1.1)                    # thread 0 on top, room above it for the note
        ax.set_title("with the second barrier: no race" if second else "without the second barrier: a race", loc='left')
    axes[-1].set_xlabel("time (loads take 1, a phase's products 2; grey: waiting at a barrier; yellow: late)")
    fig.tight_layout()
    return fig

"""Calls queued on a GPU stream: when the time per call is the GPU's, and when it is the CPU's. A model on a CPU.

Calling a matmul from Python costs the CPU some microseconds (checking the inputs, allocating the output, the launch
through the driver) before its kernel is in the stream's queue, and then costs the GPU the kernel's time. Calls made
one after another overlap: the CPU prepares call i + 1 while the GPU runs call i. Over a long run a call therefore
takes whichever is longer: the GPU's time, when the CPU keeps ahead; the CPU's, when it does not, and then the GPU
waits between products. The model leaves out:

- the latency from enqueueing to starting, a few microseconds: it delays a start by at most that much and leaves
  the time per call as it is;
- the gap the GPU leaves between two kernels of a stream, a microsecond or so: count it in the GPU's time per call;
- the queue's depth: a CPU that runs far ahead (on the order of a thousand launches) waits in the launch for room,
  and a call still takes the GPU's time;
- the spread of real costs: the model's are constant, while the CPU's move from call to call, so where the two
  sides are close a real call takes a little more than the longer.

`timeline` computes when each call is enqueued, starts and ends; `draw_timelines` draws a few such runs one above the
other, the CPU's work and the GPU's on two lanes each.
"""
from typing import NamedTuple


class Call(NamedTuple):
    "One call of a run, in µs from the moment the CPU starts the first."
    enqueued: float     # the CPU is done with it: its kernel is in the queue
    start: float        # the GPU starts it
    end: float          # the GPU is done with it


def timeline(cpu_us, gpu_us, calls=8):
    """The Calls of `calls` calls made back to back: the CPU spends `cpu_us` on each, and starts the next when done;
    the GPU spends `gpu_us` on each, and starts one once it is enqueued and the call before it has ended."""
    for name, v in (('cpu_us', cpu_us), ('gpu_us', gpu_us)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ValueError(f"{name} must be a positive number of microseconds, got {v!r}")
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be a positive int, got {calls!r}")
    run, gpu_free = [], 0.0
    for i in range(calls):
        enqueued = (i + 1) * cpu_us
        start = max(enqueued, gpu_free)
        gpu_free = start + gpu_us
        run.append(Call(enqueued, start, gpu_free))
    return run


def time_per_call(run):
    "The time per call of a run in the long run: from the first call's end to the last's, over the calls between."
    if len(run) < 2: raise ValueError("a time per call needs a run of at least two calls")
    return (run[-1].end - run[0].end) / (len(run) - 1)


def gpu_idle_share(run):
    "The share of the time from the first call's start to the last's end in which the GPU waits for a call."
    busy = sum(c.end - c.start for c in run)
    return 1 - busy / (run[-1].end - run[0].start)


def draw_timelines(runs, title=None):
    """Runs as a picture, one panel each (`runs`: {label: (cpu_us, gpu_us)}, 6 calls each): on the CPU's lane each
    call's preparation, on the GPU's its kernel, numbered alike, on one time axis; white on the GPU's lane is waiting."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(runs), 1, figsize=(11, 1.9 * len(runs) + 0.6), sharex=True, squeeze=False)
    colors = plt.get_cmap('tab10')
    for ax, (label, (cpu_us, gpu_us)) in zip(axes[:, 0], runs.items()):
        run = timeline(cpu_us, gpu_us, calls=6)
        for i, c in enumerate(run):
            for lane, (x0, x1) in ((1, (c.enqueued - cpu_us, c.enqueued)), (0, (c.start, c.end))):
                ax.broken_barh([(x0, x1 - x0)], (lane - 0.35, 0.7), facecolor=colors(i % 10), edgecolor='black', linewidth=0.5)
                ax.text((x0 + x1) / 2, lane, str(i + 1), ha='center', va='center', fontsize=9)
        ax.set_yticks([0, 1], ['GPU', 'CPU'])
        ax.set_ylim(-0.6, 1.6)
        ax.set_title(f"{label}: CPU {cpu_us:g} µs, GPU {gpu_us:g} µs a call -> {time_per_call(run):g} µs a call, "
                     f"GPU waiting {gpu_idle_share(run):.0%} of the time", fontsize=10)
    axes[-1, 0].set_xlabel("µs from the first call (the number: which call)")
    if title: fig.suptitle(title)
    fig.tight_layout()
    return fig

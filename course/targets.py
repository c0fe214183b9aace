"""A kernel's time against a reference's (cuBLAS), said as one sentence: the ratio, the target, and met or missed.

A target is either a share of the reference's speed ('speed': at least `goal` times its speed, where `goal` is a
fraction such as 0.60) or a bound on our time ('time': at most `goal` times its time, such as 1.25). A missed target
also says by how much, and the time the kernel would have needed."""

import textwrap

KINDS = ('speed', 'time')
LINE_WIDTH = 140       # the characters an output line of a notebook shows without wrapping (JupyterLab, 1620 px wide)


def wrapped(sentence, indent='  ', width=LINE_WIDTH):
    "A long target sentence as lines at most `width` wide: the first indented by `indent`, the rest by two more spaces."
    return textwrap.fill(sentence, width, initial_indent=indent, subsequent_indent=indent + '  ', break_long_words=False,
                         break_on_hyphens=False)


def against_target(ours_ms, theirs_ms, reference_name, kind, goal):
    """One sentence: our median time `ours_ms` against the reference's `theirs_ms` (both in ms), named
    `reference_name`, for a target of `kind` 'speed' (at least `goal` times its speed) or 'time' (at most `goal`
    times its time). A near miss gets the digits that show it: never '1.00x ... target at least 1.00x: missed'."""
    if kind not in KINDS: raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    ratio = theirs_ms / ours_ms if kind == 'speed' else ours_ms / theirs_ms
    met = ratio >= goal if kind == 'speed' else ratio <= goal
    need = theirs_ms / goal if kind == 'speed' else theirs_ms * goal
    head = (f"{ratio:.{_apart(ratio, goal) if not met else 2}f}x {reference_name}'s {kind}; "
            f"target {'at least' if kind == 'speed' else 'at most'} {goal:.2f}x: ")
    if met: return head + "met"
    miss = abs(ratio - goal) / goal
    digits = _apart(need, ours_ms, start=3)
    return head + (f"missed by {miss:.{0 if miss >= 0.01 else 1 if miss >= 0.001 else 2}%} "
                   f"(it would need {need:.{digits}f} ms, not {ours_ms:.{digits}f})")


def _apart(a, b, start=2):
    "The decimals (from `start`, at most start + 2) at which a and b no longer print the same."
    for d in range(start, start + 3):
        if f"{a:.{d}f}" != f"{b:.{d}f}": return d
    return start + 2


MIN_REFERENCE_MEASUREMENTS = 3     # a spread read from fewer medians of the reference is a guess: no verdict on it


def against_target_across_runs(ours, theirs, reference_name, goal=1.0, clocks=None):
    """One sentence for a speed target (at least `goal` times the reference's speed) judged over several
    measurements of one run. `ours`: our Spread in each measurement that timed us; `theirs`: the reference's Spread in
    every measurement of the run, those that timed us first and in the same order. The reference's own median moves
    between measurements (clocks, heat, the other kernels of the round): its *spread across runs*, the range of its
    medians over the lowest (at least its widest middle half, where it was measured once), is printed first. The
    target is 'met' or 'missed' only where each paired ratio clears the goal by more than that spread; otherwise the
    margin is inside the spread: 'too close to call' where every ratio lies on one side of the goal (the sentence says
    which), 'on par' where they fall on both sides. With fewer than MIN_REFERENCE_MEASUREMENTS of the
    reference, its spread is too poorly known for a verdict: the sentence says 'no verdict' and why. `clocks`, a short text (course.timing.gpu_clocks), is
    added where given."""
    if not ours or len(theirs) < len(ours): raise ValueError("every measurement of ours needs the reference's beside it")
    ratios = [t.median / o.median for o, t in zip(ours, theirs)]
    medians = [t.median for t in theirs]
    moved = (max(medians) - min(medians)) / min(medians)
    widest = max((t.q3 - t.q1) / t.median for t in theirs)
    across = max(moved, widest)
    if len(theirs) < MIN_REFERENCE_MEASUREMENTS:
        word = (f"no verdict: {len(theirs)} measurement(s) of {reference_name} are too few to know its spread "
                f"(a verdict needs {MIN_REFERENCE_MEASUREMENTS})")
    elif min(ratios) > goal * (1 + across): word = "met: above it by more than that spread"
    elif max(ratios) < goal * (1 - across): word = "missed: below it by more than that spread"
    elif min(ratios) >= goal: word = "above it, by less than that spread: too close to call"
    elif max(ratios) < goal: word = "below it, by less than that spread: too close to call"
    else: word = "on par: on both sides of it, inside that spread"
    shown = ', '.join(f"{r:.2f}x" for r in ratios)
    return (f"{shown} {reference_name}'s speed ({len(ratios)} measurement(s)); {reference_name}'s spread across this "
            f"run: {across:.1%} (its median moved {moved:.1%} over {len(theirs)} measurement(s), "
            f"{min(medians):.3f}-{max(medians):.3f} ms; its widest middle half {widest:.1%})"
            + (f", {clocks}" if clocks else "") + f"; target at least {goal:.2f}x: {word}")

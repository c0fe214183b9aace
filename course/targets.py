"""A kernel's time against a reference's (cuBLAS), said as one sentence: the ratio, the target, and met or missed.

A target is either a share of the reference's speed ('speed': at least `goal` times its speed, where `goal` is a
fraction such as 0.60) or a bound on our time ('time': at most `goal` times its time, such as 1.25). A missed target
also says by how much, and the time the kernel would have needed."""

KINDS = ('speed', 'time')


def against_target(ours_ms, theirs_ms, reference_name, kind, goal):
    """One sentence: our median time `ours_ms` against the reference's `theirs_ms` (both in ms), named
    `reference_name`, for a target of `kind` 'speed' (at least `goal` times its speed) or 'time' (at most `goal`
    times its time)."""
    if kind == 'speed':
        ratio = theirs_ms / ours_ms
        return f"{ratio:.2f}x {reference_name}'s speed; target at least {goal:.2f}x: " + (
            "met" if ratio >= goal else
            f"missed by {(goal - ratio) / goal:.0%} (it would need {theirs_ms / goal:.3f} ms, not {ours_ms:.3f})")
    if kind == 'time':
        ratio = ours_ms / theirs_ms
        return f"{ratio:.2f}x {reference_name}'s time; target at most {goal:.2f}x: " + (
            "met" if ratio <= goal else
            f"missed by {(ratio - goal) / goal:.0%} (it would need {theirs_ms * goal:.3f} ms, not {ours_ms:.3f})")
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

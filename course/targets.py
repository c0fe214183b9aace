"""A kernel's time against a reference's (cuBLAS), said as one sentence: the ratio, the target, and met or missed.

A target is either a share of the reference's speed ('speed': at least `goal` times its speed, where `goal` is a
fraction such as 0.60) or a bound on our time ('time': at most `goal` times its time, such as 1.25). A missed target
also says by how much, and the time the kernel would have needed."""

KINDS = ('speed', 'time')


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

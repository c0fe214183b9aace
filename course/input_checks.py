"The input rules every matmul wrapper of the course shares."


def check_matrix_input(name, t, device='cuda', task='multiply', dtype='float32'):
    """Check one input matrix `t` (called `name` in the messages): 2-D, of `dtype` (a torch dtype's name: float32
    unless said), contiguous, on `device` ('cuda' or 'cpu'), non-empty, small enough for 32-bit indices. Returns
    its shape; raises ValueError or TypeError with a sentence that says which rule failed (`task` names what an
    empty one leaves to do)."""
    import torch
    if not isinstance(t, torch.Tensor): raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2: raise ValueError(f"{name} must be a 2-D matrix, got {t.dim()} dimensions {tuple(t.shape)}")
    if t.dtype != getattr(torch, dtype): raise TypeError(f"{name} must be {dtype}, got {t.dtype}")
    # (t.is_cuda, an attribute, where device is 'cuda': t.device builds an object, and a small product's whole call
    # costs tens of microseconds, so each one counts)
    if (not t.is_cuda) if device == 'cuda' else t.device.type != device:
        raise ValueError(f"{name} must be on the {device.upper()} device, got {t.device}")
    if not t.is_contiguous(): raise ValueError(f"{name} must be contiguous (call .contiguous() first)")
    numel = t.numel()
    if numel == 0: raise ValueError(f"{name} is empty {tuple(t.shape)}: nothing to {task}")
    if numel >= 2**31: raise ValueError(f"{name} has {numel} elements; the kernels index with 32-bit ints")
    return tuple(t.shape)


def check_matmul_inputs(m, n, device='cuda', dtype='float32'):
    """Check that `m @ n` is a problem our kernels can do, and return (h, k, w).

    Both must pass `check_matrix_input` (with `dtype`: float32 unless said), be on the same device, with m's columns matching n's rows, and an
    output small enough for 32-bit indices. Raises ValueError or TypeError with a sentence that says which
    rule failed."""
    for name, t in (('m', m), ('n', n)): check_matrix_input(name, t, device, dtype=dtype)
    if m.get_device() != n.get_device(): raise ValueError(f"m and n must be on the same device, got {m.device} and {n.device}")
    (h, k), (k2, w) = m.shape, n.shape
    if k != k2: raise ValueError(f"size mismatch: m is {h}x{k} but n is {k2}x{w} ({k} != {k2})")
    if h * w >= 2**31: raise ValueError(f"the output {h}x{w} is too large for 32-bit indices")
    return h, k, w


# A grid holds at most this many blocks in y (and in z); in x, 2**31 - 1.
MAX_GRID_Y = 65535


def max_tile_width():
    "The largest tile width tw with tw x tw threads in one block: 32 on every NVIDIA GPU so far (1024 threads)."
    import math, torch
    threads = torch.cuda.get_device_properties(torch.cuda.current_device()).max_threads_per_block \
        if torch.cuda.is_available() else 1024
    return math.isqrt(threads)


def check_tile_width(tw, allowed=None):
    """Check a tile width before anything is launched: an int from 1 to `max_tile_width()` (and one of
    `allowed`, for kernels compiled for a few widths). Raises TypeError or ValueError saying which rule failed.
    Every wrapper of the course, CUDA C, Numba or Python, calls this one, so they all say the same."""
    import numbers
    if isinstance(tw, bool) or not isinstance(tw, numbers.Integral):
        raise TypeError(f"the tile width tw must be an int, got {type(tw).__name__} {tw!r}")
    largest = max_tile_width()
    if not 1 <= tw <= largest:
        raise ValueError(f"tile width tw={tw} is out of range: it must be between 1 and {largest} "
                         f"(a tw x tw block has at most {largest * largest} threads)")
    if allowed is not None and tw not in allowed:
        raise ValueError(f"tile width tw={tw} is not compiled in: choose one of {tuple(allowed)}")
    return int(tw)


def row_chunks(h, rows_per_block):
    """(first row, number of rows) of each launch it takes to cover h rows, when each block covers
    `rows_per_block` rows and a grid at most MAX_GRID_Y blocks in y. One chunk unless h is huge."""
    step = MAX_GRID_Y * rows_per_block
    return [(r0, min(step, h - r0)) for r0 in range(0, h, step)]


def tma_can_copy(m, n):
    """Whether Hopper's TMA unit can copy both bf16 inputs of m @ n and their product: every row a multiple
    of 16 bytes (K and N multiples of 8) and both matrices starting on 16 bytes. Kernels that use TMA send other
    shapes to a kernel without it."""
    return m.shape[1] % 8 == 0 and n.shape[1] % 8 == 0 and m.data_ptr() % 16 == 0 and n.data_ptr() % 16 == 0

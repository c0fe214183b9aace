"The input rules every matmul wrapper of the course shares."


def check_matmul_inputs(m, n, device='cuda'):
    """Check that `m @ n` is a problem our kernels can do, and return (h, k, w).

    Both must be 2-D, float32, contiguous, on `device` ('cuda' or 'cpu'), non-empty, with
    m's columns matching n's rows, and small enough for 32-bit indices. Raises ValueError or
    TypeError with a sentence that says which rule failed."""
    import torch
    for name, t in (('m', m), ('n', n)):
        if not isinstance(t, torch.Tensor): raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2: raise ValueError(f"{name} must be a 2-D matrix, got {t.dim()} dimensions {tuple(t.shape)}")
        if t.dtype != torch.float32: raise TypeError(f"{name} must be float32, got {t.dtype}")
        if t.device.type != device: raise ValueError(f"{name} must be on the {device.upper()} device, got {t.device}")
        if not t.is_contiguous(): raise ValueError(f"{name} must be contiguous (call .contiguous() first)")
        if t.numel() == 0: raise ValueError(f"{name} is empty {tuple(t.shape)}: nothing to multiply")
        if t.numel() >= 2**31: raise ValueError(f"{name} has {t.numel()} elements; the kernels index with 32-bit ints")
    if m.device != n.device: raise ValueError(f"m and n must be on the same device, got {m.device} and {n.device}")
    (h, k), (k2, w) = m.shape, n.shape
    if k != k2: raise ValueError(f"size mismatch: m is {h}x{k} but n is {k2}x{w} ({k} != {k2})")
    if h * w >= 2**31: raise ValueError(f"the output {h}x{w} is too large for 32-bit indices")
    return h, k, w

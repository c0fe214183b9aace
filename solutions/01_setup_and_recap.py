"Reference solutions of notebooks/exercises/01_setup_and_recap.ipynb. Try the exercises first!"
import torch


# Exercise 01.1: a transpose kernel, with its bound check
def transpose_bk(blockIdx, threadIdx, blockDim, m, out, h, w):
    r = blockIdx.y*blockDim.y + threadIdx.y
    c = blockIdx.x*blockDim.x + threadIdx.x
    if r >= h or c >= w: return          # the edge blocks stick out of m: those threads have no element
    out[c*h + r] = m[r*w + c]


# Exercise 01.2: reject what a kernel must not be given
def check_inputs(m, n, device='cuda'):
    for name, t in (('m', m), ('n', n)):
        if not isinstance(t, torch.Tensor): raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2: raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        if t.dtype != torch.float32: raise TypeError(f"{name} must be float32, got {t.dtype}")
        if t.device.type != device: raise ValueError(f"{name} must be on {device}, got {t.device}")
        if not t.is_contiguous(): raise ValueError(f"{name} must be contiguous")
        if t.numel() == 0: raise ValueError(f"{name} is empty")
    (h, k), (k2, w) = m.shape, n.shape
    if k != k2: raise ValueError(f"size mismatch: m is {h}x{k}, n is {k2}x{w}")
    return h, k, w

"Reference solutions of notebooks/exercises/01_setup_and_recap.ipynb. Try the exercises first!"
import torch


# Exercise 01.1: a transpose kernel, with its bound check
def transpose_bk(blockIdx, threadIdx, blockDim, m, out, h, w):
    r = blockIdx.y*blockDim.y + threadIdx.y
    c = blockIdx.x*blockDim.x + threadIdx.x
    if r >= h or c >= w: return          # the edge blocks stick out of m: those threads have no element
    out[c*h + r] = m[r*w + c]            # out is w x h: element (r, c) of m is element (c, r) of out


# Exercise 01.2: reject what a kernel must not be given
def check_inputs(m, n, device='cuda'):
    device = torch.device(device).type                # 'cuda', 'cpu', ...: compare device types, not 'cuda:0'
    for name, t in (('m', m), ('n', n)):              # every rule, for both inputs
        if not isinstance(t, torch.Tensor): raise TypeError(f"{name} must be a torch.Tensor, not a {type(t).__name__}")
        if t.dtype != torch.float32: raise TypeError(f"{name} must hold float32, not {t.dtype}")
        broken = [(t.dim() != 2, f"must be 2-D, but has shape {tuple(t.shape)}"),
                  (t.device.type != device, f"must be on the {device} device, but is on {t.device}"),
                  (not t.is_contiguous(), "must be contiguous: a view such as m.t() is not (call .contiguous())"),
                  (t.numel() == 0, f"is empty (shape {tuple(t.shape)}): there is nothing to multiply")]
        for failed, rule in broken:
            if failed: raise ValueError(f"{name} {rule}")
    if m.shape[1] != n.shape[0]:
        raise ValueError(f"m is {m.shape[0]}x{m.shape[1]} and n is {n.shape[0]}x{n.shape[1]}: m's columns must match n's rows")
    return m.shape[0], m.shape[1], n.shape[1]

"Wrong answers for notebook 01's exercises (the naive kernel, input rules)."
from . import Wrong

INPUT_RULES_PARTS = '''
import torch

def check_inputs(m, n, device='cuda'):
    for name, t in (('m', m), ('n', n)):
        if not isinstance(t, torch.Tensor): raise TypeError(f"{name} must be a tensor")
        if t.dim() != 2: raise ValueError(f"{name} must be 2-D")
        if not t.is_contiguous(): raise ValueError(f"{name} must be contiguous")
        if t.numel() == 0: raise ValueError(f"{name} is empty")
RULES
    if m.shape[1] != n.shape[0]: raise ValueError("size mismatch")
    return RESULT
'''


def input_rules(rules, result='m.shape[0], m.shape[1], n.shape[1]'):
    "A check_inputs with the shape rules right and the dtype/device `rules` (and the returned tuple) as given."
    return INPUT_RULES_PARTS.replace('RULES\n', rules).replace('RESULT', result)


BOTH_RULES = ("    for name, t in (('m', m), ('n', n)):\n"
              "        if t.dtype != torch.float32: raise TypeError(f\"{name} must be float32\")\n"
              "        if t.device.type != device: raise ValueError(f\"{name} must be on {device}\")\n")

WRONG = [
    Wrong('01.1', 'guard r <= h (off by one)',
          change=("if r >= h or c >= w: return", "if r > h or c >= w: return"),
          expect=r"reads m\[\d+\], outside the buffer.*\(r, c\) = \(5, \d\) lies outside the 5 x 7 m: it must touch nothing"),
    Wrong('01.1', 'no bound check at all',
          change=("    if r >= h or c >= w: return          # the edge blocks stick out of m: those threads have no element\n", ""),
          expect=r"outside the buffer.*\(r, c\) = \(\d+, \d+\) lies outside the 5 x 7 m: it must touch nothing"),
    Wrong('01.1', 'and instead of or in the guard',
          change=("if r >= h or c >= w: return", "if r >= h and c >= w: return"),
          expect=r"outside the buffer.*lies outside the 5 x 7 m: it must touch nothing"),
    Wrong('01.1', 'r and c swapped in the write index',
          change=("out[c*h + r] = m[r*w + c]", "out[r*h + c] = m[r*w + c]"),
          expect=r"\(r, c\) = \(\d+, \d+\) lies inside m: .*belongs at row \d+, column \d+ of the 7 x 5 result, out\[\d+\]"),
    Wrong('01.1', 'a copy, not a transpose (write index of m)',
          change=("out[c*h + r] = m[r*w + c]", "out[r*w + c] = m[r*w + c]"),
          expect=r"writes m\[0, 1\] into element \[0, 1\] of the 7 x 5 result \(out\[1\]\), which must hold m\[1, 0\]"),
    Wrong('01.1', 'w for h in the write index',
          change=("out[c*h + r] = m[r*w + c]", "out[c*w + r] = m[r*w + c]"),
          expect=r"which must hold m\[\d+, \d+\].*belongs at row c, column r of the result|"
                 r"lies inside m: .*belongs at row \d+, column \d+ of the 7 x 5 result"),
    Wrong('01.2', "forgets n's dtype",
          body=input_rules("    if m.dtype != torch.float32: raise TypeError('m must be float32')\n"
                           "    for name, t in (('m', m), ('n', n)):\n"
                           "        if t.device.type != device: raise ValueError(f\"{name} must be on {device}\")\n"),
          expect=r"check_inputs accepts an int32 n"),
    Wrong('01.2', "forgets n's device",
          body=input_rules("    for name, t in (('m', m), ('n', n)):\n"
                           "        if t.dtype != torch.float32: raise TypeError(f\"{name} must be float32\")\n"
                           "    if m.device.type != device: raise ValueError(f'm must be on {device}')\n"),
          expect=r"check_inputs accepts n on the 'meta' device while m is on the CPU"),
    Wrong('01.2', 'checks the device with is_cuda only',
          body=input_rules("    for name, t in (('m', m), ('n', n)):\n"
                           "        if t.dtype != torch.float32: raise TypeError(f\"{name} must be float32\")\n"
                           "        if device == 'cuda' and not t.is_cuda: raise ValueError(f\"{name} must be on the GPU\")\n"),
          expect=r"check_inputs accepts n on the 'meta' device"),
    Wrong('01.2', 'raises a bare Exception',
          body=input_rules(BOTH_RULES.replace('raise ValueError', 'raise Exception')),
          expect=r"check_inputs raises Exception for m on the CPU when device='cuda', where the task asks for ValueError"),
    Wrong('01.2', 'assert instead of raise',
          body=input_rules(BOTH_RULES).replace("        if t.numel() == 0: raise ValueError(f\"{name} is empty\")\n",
                                               "        assert t.numel() > 0, f\"{name} is empty\"\n"),
          expect=r"check_inputs raises AssertionError for an empty m \(0x8\)"),
    Wrong('01.2', 'returns (h, w, k)',
          body=input_rules(BOTH_RULES, result='m.shape[0], n.shape[1], m.shape[1]'),
          expect=r"returned \(5, 3, 7\), expected \(h, k, w\) = \(5, 7, 3\)"),
    Wrong('01.2', 'an error with no message',
          body=input_rules(BOTH_RULES).replace('raise ValueError("size mismatch")', 'raise ValueError()'),
          expect=r"check_inputs rejects m 8x5 with n 8x8 \(a size mismatch\), but with an empty message"),
]

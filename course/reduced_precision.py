"""How wrong a tensor-core matmul may be, and whether it is: its error against float64, and the bound its precision allows.

A tensor core multiplies inputs of fewer bits (bf16: 8 significant bits, tf32: 11) and adds in fp32. For each output
C[i][j] = sum_k A[i][k] B[k][j], with S[i][j] = sum_k |A[i][k]| |B[k][j]| (computed in float64), the error is at most
    (2 u_in + u_in^2 + K 2^-23) S[i][j] + u_out |C[i][j]|
where u_in is the unit roundoff of rounding the inputs (2^-11 for tf32's round-to-nearest; 0 when they already are
bf16), K 2^-23 covers K fp32 additions even if each one truncates, and u_out is that of the output (2^-8 for bf16,
0 for fp32). A kernel that drops, repeats or misplaces even one product of a short K breaks this bound at once.
"""

PRECISIONS = {   # name: (unit roundoff of the inputs as the kernel takes them, of its output); torch dtype of A, B and C
    'tf32': dict(u_in=2.0**-11, u_out=0.0, dtype='float32'),
    'bf16': dict(u_in=0.0, u_out=2.0**-8, dtype='bfloat16'),
}
# fp32 kernels (notebook 10's) by the same bound: inputs taken as they are, an fp32 output.
FP32 = dict(u_in=0.0, u_out=0.0, dtype='float32')


def rules(precision):
    "PRECISIONS[precision], or FP32 for 'fp32'."
    return FP32 if precision == 'fp32' else PRECISIONS[precision]


def random_inputs(h, k, w, precision, device='cuda', seed=0):
    "Random normal h x k and k x w inputs in the precision's dtype (bf16 values for 'bf16', fp32 for 'tf32')."
    import torch
    g = torch.Generator(device=device).manual_seed(seed)
    dtype = getattr(torch, rules(precision)['dtype'])
    return (torch.randn(h, k, device=device, generator=g).to(dtype), torch.randn(k, w, device=device, generator=g).to(dtype))


def error_against_float64(out, m, n, precision):
    """(worst error / its bound, relative RMS error) of out = m @ n, both against the product in float64 of the
    inputs as given. The first must be at most 1; the second says how big the error typically is."""
    p = rules(precision)
    a, b = m.double(), n.double()
    exact, scale = a @ b, a.abs() @ b.abs()
    k = m.shape[1]
    err = (out.double() - exact).abs()
    bound = (2 * p['u_in'] + p['u_in'] ** 2 + k * 2.0**-23) * scale + p['u_out'] * out.double().abs() + 1e-300
    worst = (err / bound).max().item()
    rms = (err.pow(2).mean().sqrt() / exact.pow(2).mean().sqrt().clamp_min(1e-300)).item()
    return worst, rms


def check_reduced_precision(fn, precision, shapes, device='cuda', label=None):
    """Run fn(m, n) on random normal inputs of each (h, k, w) in `shapes` and return True if every output is the right
    shape and dtype and within the precision's bound. Prints one line per shape with its error; with a `label`, one
    line for all of them instead (the worst error and its shape), plus a line for each shape that fails."""
    import torch
    ok, errors = True, []
    for h, k, w in shapes:
        m, n = random_inputs(h, k, w, precision, device)
        out = fn(m, n)
        right_kind = out.shape == (h, w) and out.dtype == getattr(torch, rules(precision)['dtype'])
        worst, rms = error_against_float64(out, m, n, precision) if right_kind else (float('inf'), float('inf'))
        good = right_kind and worst <= 1
        ok &= good
        errors.append((worst, f"{h}x{k} @ {k}x{w}"))
        if label is None or not good:
            print(f"  {h}x{k} @ {k}x{w}: {'ok' if good else 'WRONG'}, worst error {worst:.2f} of the bound, "
                  f"relative RMS error {rms:.1e}" + ('' if right_kind else f" (got {tuple(out.shape)} {out.dtype})"))
    if label is not None:
        worst, where = max(errors)
        print(f"{label}: {'ok' if ok else 'WRONG'} on {len(errors)} shapes, worst error {worst:.2f} of the bound ({where})")
    return ok


def check_graph_replays(fn, h, k, w, precision, replays=4):
    """Capture fn(m, n) on h x k and k x w inputs in a CUDA graph, then replay it `replays` times, each time on new
    random values copied into the captured inputs (notebook 09's pattern), and check each output against float64
    within the precision's bound ('fp32', 'tf32' or 'bf16'). Before capturing, fn runs once on a side stream, as
    torch advises, so that it compiles and allocates outside the graph. Prints one line; returns True if every
    replay was right."""
    import torch
    m, n = random_inputs(h, k, w, precision, seed=1)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side): fn(m, n)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph): out = fn(m, n)
    worst = []
    for replay in range(replays):
        new_m, new_n = random_inputs(h, k, w, precision, seed=10 + replay)
        m.copy_(new_m), n.copy_(new_n)
        graph.replay()
        worst.append(error_against_float64(out, m, n, precision)[0])
    ok = max(worst) <= 1
    print(f"  {h}x{k} @ {k}x{w}, {replays} replays on new inputs: {'ok' if ok else 'WRONG'}, worst errors "
          f"{', '.join(f'{x:.2f}' for x in worst)} of the bound")
    return ok


def cublas(precision):
    """torch's m @ n, that is cuBLAS, in one precision: 'fp32' (fp32 matrices, TF32 off: full fp32 arithmetic), 'tf32'
    (fp32 matrices rounded to TF32 on the tensor cores) or 'bf16' (bf16 matrices, a bf16 result). torch's TF32 switch
    is set for the call and put back after it."""
    if precision not in ('fp32', 'tf32', 'bf16'): raise ValueError(f"precision must be 'fp32', 'tf32' or 'bf16', got {precision!r}")
    import torch

    def matmul(m, n):
        allowed = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = precision == 'tf32'
        try: return m @ n
        finally: torch.backends.cuda.matmul.allow_tf32 = allowed
    matmul.__name__ = matmul.__qualname__ = f'cublas_{precision}'
    return matmul

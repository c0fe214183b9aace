"""The shapes every kernel of the course is checked on, and the one check against torch.

Awkward shapes catch the bugs a square multiple of the tile width hides: sizes that are not multiples
of the tile width (the edge tiles), a single row (1 x K) and a single column (K x 1)."""

# The lecture's problem: (5120 x 256) @ (256 x 5120).
LECTURE_SHAPE = (5120, 256, 5120)

# (h, k, w) for the Python kernels and Numba's simulator, where every CUDA thread is Python code:
# small, not multiples of the tile widths used with them (4, 8, 16), 1 x K and K x 1.
SMALL_AWKWARD_SHAPES = ((5, 7, 3), (33, 64, 31), (1, 37, 5), (6, 37, 1))

# The same, and 1 x K @ K x 1, each with a tile width it is not a multiple of: for the tests of the Python
# and Numba kernels, ((h, k, w), tw).
SMALL_AWKWARD_SHAPES_AND_TILE_WIDTHS = tuple(zip(SMALL_AWKWARD_SHAPES + ((1, 9, 1),), (4, 16, 8, 8, 4)))

# For the GPU: the lecture's problem, then the same kinds of awkward shapes at a size a GPU fills.
LECTURE_AND_AWKWARD_SHAPES = (LECTURE_SHAPE, (1000, 300, 700), (1, 300, 700), (1000, 300, 1), (33, 17, 31))


def check_against_torch(fn, shapes=LECTURE_AND_AWKWARD_SHAPES, device='cuda', **kwargs):
    """Compare fn(m, n, **kwargs) with torch's m @ n on random inputs of each (h, k, w) in `shapes`.

    Prints one line per shape and returns True if every result agrees (to 1e-4)."""
    import torch
    ok = True
    for h, k, w in shapes:
        m, n = torch.rand(h, k, device=device), torch.rand(k, w, device=device)
        good = torch.allclose(fn(m, n, **kwargs), m @ n, rtol=1e-4, atol=1e-4)
        ok &= good
        print(f"  {h}x{k} @ {k}x{w}{''.join(f', {a}={v}' for a, v in kwargs.items())}: {'ok' if good else 'WRONG'}")
    return ok


def bad_matmul_inputs(device='cuda'):
    """{what is wrong: (m, n)}: inputs every matmul wrapper must refuse with a ValueError or TypeError
    (a CPU tensor where the GPU is expected, non-contiguous, float64, a size mismatch, an empty matrix)."""
    import torch
    good = torch.rand(8, 8, device=device)
    return {'CPU tensor': (torch.rand(8, 8), good), 'non-contiguous': (torch.rand(8, 8, device=device).t(), good),
            'float64': (good.double(), good), 'size mismatch': (torch.rand(8, 5, device=device), good),
            'empty': (torch.rand(0, 8, device=device), good)}


def lecture_problem(device='cpu', seed=42):
    "The lecture's inputs, m1 (5120x256) and m2 (256x5120), random with a fixed seed, and the product's FLOP count."
    import torch
    torch.manual_seed(seed)
    h, k, w = LECTURE_SHAPE
    return torch.rand(h, k, device=device), torch.rand(k, w, device=device), 2 * h * k * w

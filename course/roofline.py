"""The roofs of a roofline, where a matmul sits under them, and the work its tiles waste on padding.

- `fp32_peak`: the float32 peak of a GPU: the datasheet value for the GPUs of `KNOWN_GPUS`, else computed from
  multiprocessors x float32 lanes x 2 x clock, labelled with where it comes from.
- `minimum_traffic_intensity` and `measured_intensity`: FLOP per byte of device memory, from the least traffic a
  product needs, or from the bytes a profiler counted.
- `padding_waste`: the share of a tiled kernel's multiply-adds that fall on the zeros padding the last tiles.
- `series_styles`, `roofline_chart`: a colour and a marker for each series, and the chart (returned, never saved).
No GPU is needed here: the numbers come in as arguments, so the functions are tested with made-up ones.
"""
import math, re
from typing import NamedTuple


# --------------------------------------------------------------------------------------------------
# The float32 peak
# --------------------------------------------------------------------------------------------------
class GpuSpec(NamedTuple):
    "A GPU's published numbers: its float32 peak as the datasheet gives it, and the figures it is made of."
    pattern: str            # a regular expression matched against torch.cuda.get_device_name()
    name: str
    sms: int                # streaming multiprocessors
    fp32_lanes: int         # float32 units per multiprocessor (each does one multiply-add per clock)
    boost_ghz: float
    datasheet_tflops: float


# Checked in to the course, by hand, from NVIDIA's datasheets; the first pattern that matches the device name wins
# (so the PCIe and NVL variants come before the plain name, which is the SXM part).
KNOWN_GPUS = [
    GpuSpec(r'H100.*PCIe', 'H100 PCIe', 114, 128, 1.755, 51.0),
    GpuSpec(r'H100.*NVL', 'H100 NVL', 132, 128, 1.785, 60.0),
    GpuSpec(r'H100', 'H100 SXM', 132, 128, 1.98, 67.0),
    GpuSpec(r'H200.*NVL', 'H200 NVL', 132, 128, 1.785, 60.0),
    GpuSpec(r'H200', 'H200 SXM', 132, 128, 1.98, 67.0),
    GpuSpec(r'A100', 'A100', 108, 64, 1.41, 19.5),
    GpuSpec(r'L40S', 'L40S', 142, 128, 2.52, 91.6),
    GpuSpec(r'\bL4\b', 'L4', 58, 128, 2.04, 30.3),
    GpuSpec(r'\bA10\b', 'A10', 72, 128, 1.695, 31.2),
    GpuSpec(r'\bT4\b', 'T4', 40, 64, 1.59, 8.1),
    GpuSpec(r'RTX 4090', 'GeForce RTX 4090', 128, 128, 2.52, 82.6),
]

# Float32 lanes per multiprocessor by compute capability (CUDA C Programming Guide, "Arithmetic Instructions").
FP32_LANES_PER_SM = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
                     (10, 0): 128, (12, 0): 128}


class Peak(NamedTuple):
    flops: float            # FLOP/s
    source: str             # where the number comes from, for the chart's legend and the printout


def computed_fp32_flops(sms, fp32_lanes, clock_ghz):
    "Multiprocessors x float32 lanes x 2 FLOP per multiply-add x clock: the rate if every lane did an FMA every cycle."
    return sms * fp32_lanes * 2 * clock_ghz * 1e9


def known_gpu(device_name):
    "The GpuSpec whose pattern matches `device_name`, or None."
    return next((g for g in KNOWN_GPUS if re.search(g.pattern, device_name)), None)


def fp32_peak(device_name, sms=None, capability=None, clock_ghz=None):
    """The float32 peak of this GPU: the datasheet value where `device_name` is in KNOWN_GPUS; otherwise computed
    from its multiprocessors, the lanes of its compute capability and `clock_ghz` (its highest SM clock), with a
    label that says so. None where neither is possible."""
    spec = known_gpu(device_name)
    if spec:
        return Peak(spec.datasheet_tflops * 1e12,
                    f"datasheet fp32 peak, {spec.name} ({spec.sms} SMs x {spec.fp32_lanes} lanes x 2 x {spec.boost_ghz} GHz)")
    lanes = FP32_LANES_PER_SM.get(tuple(capability)) if capability else None
    if not (sms and lanes and clock_ghz): return None
    return Peak(computed_fp32_flops(sms, lanes, clock_ghz),
                f"computed fp32 peak, not a datasheet value ({sms} SMs x {lanes} lanes x 2 x {clock_ghz:.2f} GHz)")


# --------------------------------------------------------------------------------------------------
# Arithmetic intensity
# --------------------------------------------------------------------------------------------------
def matmul_flop(h, k, w):
    "The floating-point operations of an h x k @ k x w product: a multiply and an add per term."
    return 2 * h * k * w


def minimum_traffic_intensity(h, k, w, bytes_per_value=4):
    "FLOP per byte when each input is read from device memory once and the output written once: the least traffic."
    return matmul_flop(h, k, w) / (bytes_per_value * (h * k + k * w + h * w))


def measured_intensity(flop, bytes_read, bytes_written):
    "FLOP per byte of device memory traffic a profiler counted (reads plus writes)."
    return flop / (bytes_read + bytes_written)


# --------------------------------------------------------------------------------------------------
# Padding
# --------------------------------------------------------------------------------------------------
class PaddingWaste(NamedTuple):
    "Shares of the multiply-adds that a kernel computes on padding, overall and from each dimension alone."
    total: float
    rows: float             # from rounding h up to a multiple of BM
    inner: float            # from rounding k up to a multiple of BK
    cols: float             # from rounding w up to a multiple of BN

    def __str__(self): return f"{self.total:.1%}"


def padded(n, tile):
    "n rounded up to a whole number of tiles."
    return math.ceil(n / tile) * tile


def padding_waste(shape, tile):
    """The share of the multiply-adds that a kernel with BM x BN output tiles and BK-deep slices of K computes on
    padding, for an h x k @ k x w product (shape = (h, k, w)). `tile` is (BM, BN, BK), or tw for tw x tw tiles
    with tw-deep slices. The kernel computes padded(h) x padded(k) x padded(w) multiply-adds, of which h x k x w
    are the product's: the rest multiply the zeros that fill the last tiles, or run in lanes with no output."""
    h, k, w = shape
    BM, BN, BK = (tile, tile, tile) if isinstance(tile, int) else tile
    share = lambda n, t: 1 - n / padded(n, t)
    return PaddingWaste(1 - h * k * w / (padded(h, BM) * padded(k, BK) * padded(w, BN)),
                        share(h, BM), share(k, BK), share(w, BN))


# --------------------------------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------------------------------
MARKERS = ['o', 's', '^', 'D', 'v', 'P', 'X', '<', '>', 'h', '*']


def distinct_colours(greys=True):
    """The 20 colours of matplotlib's tab20, the strong ten first, then their light partners; without its two
    greys if `greys` is False (leaving black and greys free for reference series)."""
    import matplotlib
    colours = matplotlib.colormaps['tab20'].colors
    colours = list(colours[0::2]) + list(colours[1::2])
    return colours if greys else [c for c in colours if len(set(c)) > 1]


def series_styles(names, greys=True):
    """{name: dict(color=..., marker=...)}: a colour and a marker for each series, so that no two of up to 20
    series (18 without greys) share a colour, and neighbours in the list differ in both. Pass every name a set
    of charts will show (in one fixed order) and reuse the result, so a series looks the same in all of them."""
    colours = distinct_colours(greys)
    return {name: dict(color=colours[i % len(colours)], marker=MARKERS[i % len(MARKERS)]) for i, name in enumerate(names)}


def roofline_chart(roofs, bandwidth, points, minimum_intensity=None, title='', styles=None, bandwidth_source='measured'):
    """A roofline: FLOP/s against FLOP per byte of device memory traffic, both axes logarithmic.

    - `roofs`: [(label, FLOP/s)]: the compute ceilings, drawn flat from where the memory roof meets them;
    - `bandwidth`: bytes/s, the memory roof (a line of slope one: FLOP/s = bandwidth x intensity);
    - `points`: {name: (intensity, FLOP/s)}, one marker each (styles from `styles`, else `series_styles`);
    - `minimum_intensity`: a dashed vertical line where a kernel moving the least possible traffic would sit.
    The legend sits outside the axes, on the right."""
    import matplotlib.pyplot as plt
    styles = styles or series_styles(list(points))
    fig, ax = plt.subplots(figsize=(12, 6.5), layout='constrained')
    top = max(f for _, f in roofs)
    xs = [x for x, _ in points.values()] + [f / bandwidth for _, f in roofs] + ([minimum_intensity] if minimum_intensity else [])
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    T = 1e12                                                                     # the axis is in TFLOP/s
    ax.plot([x_lo, top / bandwidth], [bandwidth * x_lo / T, top / T], color='k', lw=1.6,
            label=f"memory roof: {bandwidth / 1e12:.2f} TB/s ({bandwidth_source})")
    for (label, flops), ls in zip(roofs, ['-', '-.', ':', '--']):
        ax.plot([flops / bandwidth, x_hi], [flops / T, flops / T], color='0.25', ls=ls, lw=1.6, label=f"{label}: {flops / T:.1f} TFLOP/s")
    if minimum_intensity:
        ax.axvline(minimum_intensity, color='0.5', ls='--', lw=1,
                   label=f"least traffic this problem needs: {minimum_intensity:.0f} FLOP/byte")
    for name, (x, y) in points.items():
        ax.plot([x], [y / T], ls='none', ms=9, markeredgecolor='k', markeredgewidth=0.6, label=name, **styles[name])
    ax.set_xscale('log', base=2); ax.set_yscale('log'); ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel('arithmetic intensity: FLOP per byte of device memory traffic', fontsize=11)
    ax.set_ylabel('TFLOP/s', fontsize=11); ax.grid(True, which='both', alpha=.3)
    ax.set_title(title, fontsize=11)
    fig.legend(loc='outside right upper', fontsize=8.5)
    plt.close(fig)
    return fig

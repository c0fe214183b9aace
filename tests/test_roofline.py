"""course/roofline.py on made-up numbers: the peaks, the intensities, the padding waste, the styles and what the
roofline chart draws where."""
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course.roofline import (KNOWN_GPUS, computed_fp32_flops, fp32_peak, known_gpu, matmul_flop,  # noqa: E402
                             measured_intensity, minimum_traffic_intensity, padding_waste, roofline_chart,
                             series_styles)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close('all')


@pytest.mark.parametrize('spec', KNOWN_GPUS, ids=lambda g: g.name)
def test_each_datasheet_peak_is_its_lanes_times_its_clock(spec):
    "The table's datasheet values agree (to 1%) with SMs x lanes x 2 x boost clock: no typo in either."
    assert computed_fp32_flops(spec.sms, spec.fp32_lanes, spec.boost_ghz) / 1e12 == pytest.approx(spec.datasheet_tflops, rel=0.01)


@pytest.mark.parametrize('device, part', [('NVIDIA H100 80GB HBM3', 'H100 SXM'), ('NVIDIA H100 PCIe', 'H100 PCIe'),
                                          ('NVIDIA H100 NVL', 'H100 NVL'), ('NVIDIA H200', 'H200 SXM'),
                                          ('NVIDIA A100-SXM4-80GB', 'A100'), ('NVIDIA A10', 'A10'), ('NVIDIA L4', 'L4'),
                                          ('NVIDIA L40S', 'L40S')])
def test_device_names_find_their_part(device, part):
    assert known_gpu(device).name == part


def test_h100_sxm_peak_is_the_datasheets_67_tflops():
    peak = fp32_peak('NVIDIA H100 80GB HBM3')
    assert peak.flops == 67e12 and 'datasheet' in peak.source and '132 SMs' in peak.source


def test_an_unknown_gpu_gets_a_computed_peak_labelled_as_such():
    peak = fp32_peak('Some Future GPU', sms=100, capability=(9, 0), clock_ghz=2.0)
    assert peak.flops == pytest.approx(100 * 128 * 2 * 2.0e9)
    assert 'computed' in peak.source and 'not a datasheet' in peak.source
    assert fp32_peak('Some Future GPU', sms=100, capability=(99, 0), clock_ghz=2.0) is None   # lanes unknown
    assert fp32_peak('Some Future GPU', sms=100, capability=(9, 0)) is None                   # clock unknown


def test_intensities():
    assert matmul_flop(5120, 256, 5120) == 2 * 5120 * 256 * 5120
    # the lecture's problem: 13.4 GFLOP over 4 x (2 x 5120 x 256 + 5120^2) bytes
    assert minimum_traffic_intensity(5120, 256, 5120) == pytest.approx(2 * 5120 * 256 * 5120 / (4 * (2 * 5120 * 256 + 5120**2)))
    assert minimum_traffic_intensity(4096, 4096, 4096) == pytest.approx(4096 / 6)
    assert measured_intensity(1000, 300, 200) == 2.0


def test_padding_waste_in_k_alone():
    "K = 10 in slices of 16: 6 of every 16 multiply-adds are on padding; h and w are whole tiles."
    waste = padding_waste((50000, 10, 50000), 16)
    assert waste.inner == pytest.approx(0.375) and waste.total == pytest.approx(0.375)
    assert waste.rows == 0 and waste.cols == 0 and str(waste) == '37.5%'


def test_padding_waste_of_a_narrow_output_and_of_the_lecture():
    "50000 x 784 @ 784 x 10 with 128 x 128 tiles, BK = 8: only 10 of 128 columns are real."
    waste = padding_waste((50000, 784, 10), (128, 128, 8))
    assert waste.cols == pytest.approx(118 / 128)
    assert waste.rows == pytest.approx(1 - 50000 / 50048) and waste.inner == 0
    assert waste.total == pytest.approx(1 - 50000 * 10 / (50048 * 128))
    assert padding_waste((5120, 256, 5120), (128, 128, 16)).total == 0
    assert padding_waste((5120, 256, 5120), (16, 16, 1)).total == 0


def test_styles_are_distinct():
    names = [f'kernel {i}' for i in range(40)]
    styles = series_styles(names)
    first20 = [styles[n]['color'] for n in names[:20]]
    assert len(set(first20)) == 20                                             # 20 series: 20 colours
    assert len({(tuple(s['color']), s['marker']) for s in styles.values()}) == 40   # beyond: colour x marker pairs
    for a, b in zip(names, names[1:]):                                         # neighbours differ in both
        assert styles[a]['color'] != styles[b]['color'] and styles[a]['marker'] != styles[b]['marker']
    coloured = series_styles(names[:18], greys=False)
    assert len({s['color'] for s in coloured.values()}) == 18
    assert all(len(set(s['color'])) > 1 for s in coloured.values())           # no grey among them


def lines_by_label(fig):
    return {l.get_label(): l for l in fig.axes[0].get_lines()}


def test_roofline_chart_draws_the_roofs_and_points_where_they_belong():
    roofs = [('datasheet fp32 peak', 67e12), ('measured FMA ceiling', 60e12), ('TF32 (cuBLAS, measured)', 380e12)]
    points = {'kernel A': (100.0, 40e12), 'kernel B': (20.0, 8e12)}
    fig = roofline_chart(roofs, 3e12, points, minimum_intensity=116.0, title='fake GPU')
    lines = lines_by_label(fig)
    memory = next(l for name, l in lines.items() if name.startswith('memory roof'))
    x, y = memory.get_data()
    assert y[-1] == pytest.approx(380) and x[-1] == pytest.approx(380e12 / 3e12)   # up to the highest roof's ridge
    assert y[0] == pytest.approx(3 * x[0])                                        # slope: 3 TB/s, in TFLOP/s
    for label, flops in roofs:
        roof = next(l for name, l in lines.items() if name.startswith(label))
        x, y = roof.get_data()
        assert list(y) == [pytest.approx(flops / 1e12)] * 2 and x[0] == pytest.approx(flops / 3e12)
    assert '67.0 TFLOP/s' in next(n for n in lines if n.startswith('datasheet'))
    for name, (x, y) in points.items():
        assert list(lines[name].get_xdata()) == [x] and list(lines[name].get_ydata()) == [pytest.approx(y / 1e12)]
    assert lines['kernel A'].get_marker() != lines['kernel B'].get_marker()
    assert lines['kernel A'].get_color() != lines['kernel B'].get_color()
    minimum = next(l for name, l in lines.items() if name.startswith('least traffic'))
    assert list(minimum.get_xdata()) == [116.0, 116.0]


def test_roofline_legend_is_outside_the_axes():
    fig = roofline_chart([('peak', 67e12)], 3e12, {'k': (100.0, 40e12)})
    fig.draw_without_rendering()
    assert fig.axes[0].get_legend() is None and len(fig.legends) == 1
    assert fig.legends[0].get_window_extent().x0 >= fig.axes[0].get_window_extent().x1

"""The exercises of notebook 04: one Python thread per CUDA thread, and barriers."""
from ..checked_simulator import Trace, buffers, dim3, run_threaded_blocks
from .parts import NotYet, at_most, barriers_in_place, compare, need, running
from .registry import exercise
from .lesson_10 import accumulation_mistakes
from .simulated import (as_tensor, cdiv, compare_or_explain, double_store, nan_buffer, problem, products_in_order,
                        run_matmul_kernel)


# --------------------------------------------------------------------------------------------------
# 04.1: a fused bias + ReLU epilogue, with the barriers placed by the learner
# --------------------------------------------------------------------------------------------------

def relu(x): return x.clamp(min=0)


def fused_values(m, n, bias, tw, bias_at=('end',), relu_at='end', final_relu=False):
    """The values a tiled kernel computes for relu(m @ n + bias) with the bias added at each of the places
    `bias_at` and the ReLU applied at `relu_at`: 'end' (after the loop, as it should), 'tile' (after each tile
    of k), 'product' (after each product), 'never'; or relu_at='before bias'. final_relu: a second ReLU
    after the loop as well."""
    p, phase = 0., 0
    for prod, ph in products_in_order(m, n, tw):
        if ph != phase:
            p, phase = tile_end(p, bias, bias_at, relu_at), ph
        p = p + prod
        if 'product' in bias_at: p = p + bias.double()
        if relu_at == 'product': p = relu(p)
    p = tile_end(p, bias, bias_at, relu_at)
    if relu_at == 'before bias': p = relu(p)
    if 'end' in bias_at: p = p + bias.double()
    return relu(p) if relu_at == 'end' or final_relu else p


def tile_end(p, bias, bias_at, relu_at):
    if 'tile' in bias_at: p = p + bias.double()
    return relu(p) if relu_at == 'tile' else p


def epilogue_mistakes(m, n, bias, tw):
    """(values, mistake) for every misplaced bias and ReLU (see fused_values), then for a sum kept wrongly across the
    phases (set to 0 in every phase, say), with the bias and the ReLU where they belong: notebook 10's sentences."""
    tiles = cdiv(m.shape[1], tw)
    def bias_wrong(places):
        if places == ('end',): return None
        if not places: return "never adds the bias"
        times = tiles * ('tile' in places) + tiles * tw * ('product' in places) + ('end' in places)
        where = ' and '.join(w for p, w in (('tile', 'once per tile of k'), ('product', 'with every product'),
                                             ('end', 'once after the loop')) if p in places)
        return f"adds the bias {times} times ({where}), where it belongs once, to the finished sum"
    relu_wrong = {'end': None,
                  'before bias': "applies the ReLU before adding the bias, so a negative sum is cut to 0 and then "
                                 "shifted by the bias, where the sum plus the bias should be cut",
                  'tile': "applies the ReLU after each tile of k, to a sum that is not complete yet (a partial sum can "
                          "be negative where the whole one is not)",
                  'product': "applies the ReLU after each product, to a sum that is not complete yet (a partial sum can "
                             "be negative where the whole one is not)",
                  'never': "never applies the ReLU: negative values reach out"}
    for relu_at, relu_why in relu_wrong.items():
        for bias_at in (('end',), ('tile',), ('tile', 'end'), ('product',), ('product', 'end'), ()):
            why = ', and '.join(w for w in (bias_wrong(bias_at), relu_why) if w)
            if not why: continue
            for final_relu in ((False, True) if relu_at in ('tile', 'product') else (False,)):
                yield fused_values(m, n, bias, tw, bias_at, relu_at, final_relu), why
    yield from sum_mistakes(m, n, bias, tw)


def sum_mistakes(m, n, bias, tw):
    "(values, mistake) for each way of keeping the sum wrongly that accumulation_mistakes knows, its epilogue right."
    for sums, why in accumulation_mistakes(m, n, tw): yield relu(sums + bias.double()), why


def run_bias_relu_kernel(kernel, h, k, w, tw, seed):
    """Run kernel(..., m, n, bias, out, h, w, k, tw=tw) on tw x tw blocks, with shuffled threads, on random
    m, n and bias of both signs (so that the ReLU has something to cut). Returns (result, (m, n, bias), trace)."""
    import torch
    g = torch.Generator().manual_seed(seed)
    m, n, bias = (torch.randn(*shape, generator=g) for shape in ((h, k), (k, w), (w,)))
    trace = Trace()
    b = buffers(trace, m=m, n=n, bias=bias)
    out = nan_buffer(trace, 'out', h * w)
    with running(f"{kernel.__name__} on {problem(h, k, w, tw=tw)}"):
        run_threaded_blocks(kernel, dim3(cdiv(w, tw), cdiv(h, tw)), dim3(tw, tw), 2 * tw * tw,
                            b['m'], b['n'], b['bias'], out, h, w, k, trace=trace, seed=seed, tw=tw)
    return as_tensor(out, h, w), (m, n, bias), trace


@exercise('04.1', 'a fused bias + ReLU epilogue, with your own barriers',
          hints=("Two barriers per phase, as in notebook 04, outside any `if`: one between storing the tiles and reading them, one between "
                 "reading them and the next phase overwriting them. p starts at 0 once, before the loop, and each product is added to it (+=). "
                 "The bias (once) and then the ReLU belong after the loop, when p is the whole sum: max(p + bias[c], 0.).",
                 "syncb.wait() stands twice in the loop body, outside any `if`: between the loads and the products, and "
                 "after the products. The epilogue is the guarded store after the loop: the ReLU (max with 0.) of p plus "
                 "the bias of column c."))
def fused_bias_relu(ns, report):
    kernel, = need(ns, 'matmul_bias_relu_k')
    barriers_in_place(report, kernel, 'matmul_bias_relu_k')
    tw = 4
    shapes = ((6, 10, 1), (5, 9, 3), (9, 13, 6), (1, 9, 5))    # first one column: an off-by-one row guard fails in one thread
    for seed, (h, k, w) in enumerate(shapes):
        got, (m, n, bias), trace = run_bias_relu_kernel(kernel, h, k, w, tw, seed)
        what = problem(h, k, w, tw=tw)
        compare_or_explain(got, relu(m @ n + bias), what, lambda: epilogue_mistakes(m, n, bias, tw))
        at_most(trace, 'global', 'write', 1, "storing each output element once")
        # Its bias once per output element: read in the epilogue (twice in one expression is fine), not once per phase.
        at_most(trace, 'bias', 'read', 2, f"adding the bias once per output element, in the epilogue after the loop, on {what},")
        at_most(trace, 'global', 'read', 2 * cdiv(k, tw) + 2, f"a tiled kernel with its epilogue on {what}")
        at_most(trace, 'shared', 'read', 2 * tw * cdiv(k, tw), f"a tiled kernel on {what}")
    report.ok("no shared-memory race and no deadlock, with threads started in shuffled orders and switching at random")
    report.ok("relu(m @ n + bias) right on " + ', '.join(f"{h}x{k} @ {k}x{w}" for h, k, w in shapes) +
              " with 4x4 blocks, inputs of both signs")
    report.ok("each thread reads 2 values per phase from global memory, 2*tw from shared memory, and its bias only in the epilogue")


# --------------------------------------------------------------------------------------------------
# 04.2: rectangular tiles, their loads shared among the block's threads
# --------------------------------------------------------------------------------------------------

def tile_element(i, th, tw, tk):
    "'ms[r][c]' or 'ns[r][c]' for index i of the shared buffer (ms: th x tk, then ns: tk x tw)."
    return f"ms[{i // tk}][{i % tk}]" if i < th * tk else f"ns[{(i - th * tk) // tw}][{(i - th * tk) % tw}]"


def tiles_loaded_once(trace, th, tw, tk, phases, what):
    "Fail unless every block stored each element of its two tiles once per phase (none left out, none twice)."
    from collections import Counter
    stores = {}
    for (block, _), accesses in trace.addresses.items():
        stores.setdefault(block, Counter()).update(i for space, kind, _, i in accesses if space == 'shared' and kind == 'write')
    for block, counts in sorted(stores.items()):
        for i in range(th * tk + tk * tw):
            if counts[i] != phases:
                how = "no thread loads it" if counts[i] < phases else "it is loaded more than once"
                raise NotYet(f"{what}: in block (x={block[0]}, y={block[1]}), {tile_element(i, th, tw, tk)} is stored "
                             f"{counts[i]} times in {phases} phases: {how} in some phase")


def overlapping_loads(sentence, th, tw, tk):
    "The race a tile element stored by two threads in one phase is, said as what it is here: overlapping loads."
    race = double_store(sentence)
    if not race: return sentence
    (bx, by), (x1, y1), (x2, y2), i = race
    return (f"{sentence.split(': a barrier is missing')[0]}: threads (x={x1}, y={y1}) and (x={x2}, y={y2}) of block "
            f"(x={bx}, y={by}) both load {tile_element(i, th, tw, tk)} in the same phase, so the loads overlap and some other "
            f"element is left out")


@exercise('04.2', 'rectangular tiles with threads and barriers',
          hints=("A thread loads several elements of a tile: start each loop at the thread's own index (tc along a row of ms, tr down a column of ns) and step by the number of threads that share the row (tw) or the column (th). The barriers stand as in 04.1: two per phase, outside any `if`.",
                 'Thread (tr, tc) loads elements tc, tc + tw, tc + 2*tw, ... of row tr of ms (a range with a step), and elements tr, tr + th, ... of column tc of ns, each guarded by the bounds of the matrix; the products then run over all tk elements of row tr of ms and column tc of ns.'))
def rectangular_thread_tiles(ns, report):
    kernel, = need(ns, 'matmul_rect_k')
    barriers_in_place(report, kernel, 'matmul_rect_k')
    for seed, ((h, k, w), (th, tw, tk)) in enumerate((((5, 7, 3), (4, 2, 6)), ((9, 11, 10), (2, 4, 3)),
                                                       ((1, 13, 6), (3, 3, 5)), ((7, 5, 1), (4, 2, 6)))):
        what = problem(h, k, w, th=th, tw=tw, tk=tk)
        try:
            got, expected, trace = run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, dim3(tw, th), th * tk + tk * tw,
                                                     seed=seed, tk=tk)
        except NotYet as e:
            raise NotYet(overlapping_loads(str(e), th, tw, tk)) from None
        tiles_loaded_once(trace, th, tw, tk, cdiv(k, tk), what)
        compare(got, expected, what)
        limit = (cdiv(tk, tw) + cdiv(tk, th)) * cdiv(k, tk)
        at_most(trace, 'global', 'read', limit, f"sharing the loads of each tile among the block's threads on {what}")
    report.ok("no race and no deadlock, with shuffled thread orders")
    report.ok("right with th x tw blocks of 4x2, 2x4 and 3x3 and k-tiles of 6, 3 and 5, on awkward shapes")
    report.ok("every element of each tile is loaded by one thread per phase; the block's threads share the loads")

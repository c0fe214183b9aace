"""The exercises of notebook 13: how many bytes a stage's `full` barrier expects, the strides of the wgmma
descriptor of B's stage, and the pieces of one cluster's stretch in step 8's stream-K. All are checked on a CPU,
against the course's models of the kernels of notebook 13: course/mbarrier_pipeline.py (the mbarrier and the TMA
pipeline on full/empty barriers), course/wgmma_layout.py (where TMA writes a tile, where a wgmma descriptor reads
it) and course/stream_k.py (who multiplies which stages of the last round)."""
from ..mbarrier_pipeline import PipelineRace, PipelineStuck, simulate
from ..stream_k import piece_role, plan, stretch_pieces, stretch_start
from ..wgmma_layout import SWIZZLE_BYTES, b_stage_offset, descriptor, descriptor_fields, mismatches, swizzle_128, \
    wgmma_offset
from .lesson_12 import asked_twice, whole_numbers
from .parts import NotYet, need_function, running
from .registry import exercise

CONSUMER_ROWS = 64       # rows of A per consumer warpgroup (one wgmma m64): a stage of bm rows feeds bm / 64 consumers
BOX_COLUMNS = 64         # columns of B per TMA box in notebook 13's kernels (128 bytes of bf16)


def and_list(numbers, sort=True):
    "'1, 2 and 4'."
    numbers = [str(n) for n in (sorted(numbers) if sort else numbers)]
    return ', '.join(numbers[:-1]) + ' and ' + numbers[-1]


# --------------------------------------------------------------------------------------------------
# 13.1: the bytes one stage's full barrier expects
# --------------------------------------------------------------------------------------------------

STAGE_SHAPES = [(bm, bn, bk) for bm in (128, 64, 256) for bn in (128, 256, 64) for bk in (64, 32)]
CLUSTER_SIZES = (1, 2, 4)
ELEMENT_SIZES = (2, 1, 4)          # bf16 / fp16 first, then 1-byte (fp8) and 4-byte (tf32) elements
SIMULATED = dict(tiles=6, stages=3)  # the model's pipeline when it explains a wrong byte count


class StageQuestion(tuple):
    "The arguments (bm, bn, bk, cluster_blocks, element_bytes) of one call of expected_bytes, shown with their names."
    def __str__(self):
        return '(' + ', '.join(f"{name}={v}" for name, v in zip(('bm', 'bn', 'bk', 'cluster_blocks', 'element_bytes'), self)) + ')'


def byte_questions():
    """The (bm, bn, bk, cluster_blocks, element_bytes) the check asks about: every stage shape, cluster size and
    element size where the cluster's blocks share B's boxes evenly (as the kernels' static_assert demands)."""
    return [StageQuestion((bm, bn, bk, cluster, size)) for size in ELEMENT_SIZES for cluster in CLUSTER_SIZES
            for bm, bn, bk in STAGE_SHAPES if (bn // BOX_COLUMNS) % cluster == 0]


def landing_bytes(bm, bn, bk, cluster_blocks, element_bytes):
    "The bytes that land in one block's stage: its own A tile and the whole of B's tile, whoever copied it."
    return (bm * bk + bk * bn) * element_bytes


def call_text(key): return f"expected_bytes{StageQuestion(key)}"


def slips(bm, bn, bk, cluster, size):
    "(what was counted, its value) for the mistakes a byte count is likely to make, in the order they are told apart."
    a, b = bm * bk, bk * bn
    return [
        (f"what this block's own producer copies (A's tile and 1/{cluster} of B's boxes). The other "
         f"producer{'s' if cluster > 2 else ''} of the cluster multicast the rest of B's boxes into this block too, and "
         "every byte that lands in a block counts down that block's barrier, whoever issued the copy",
         (a + b // cluster) * size),
        ("elements, not bytes: element_bytes is left out", a + b),
        ("2 bytes per element whatever element_bytes says", (a + b) * 2),
        ("A's tile only: B's tile lands in the same stage and counts down the same barrier", a * size),
        ("B's tile only: A's tile lands in the same stage and counts down the same barrier", b * size),
        ("the A tiles of every block of the cluster: each block's A tile lands in that block only, and counts down that "
         "block's barrier only", (cluster * a + b) * size),
        ("B's tile once per block of the cluster: a multicast copy writes each box once into each block, so a block "
         "receives B's tile once", (a + cluster * b) * size),
        (f"B's tile counted as bk x bm: bm where bn belongs (B's tile is bk x bn = {bk} x {bn}), which is right only for "
         "square tiles, bm = bn", (a + bk * bm) * size),
        (f"A's tile counted as bn x bk: bn where bm belongs (A's tile is bm x bk = {bm} x {bk}), which is right only for "
         "square tiles, bm = bn", (bn * bk + b) * size),
    ]


def what_was_counted(answers, key):
    """': that is <the slip>' for the likely mistake that gives the learner's answer at `key` and at the most other
    stages asked (two slips can give the same count for one stage), or '' where none gives it."""
    value, truth = answers[key], landing_bytes(*key)
    candidates = [i for i, (_, slip) in enumerate(slips(*key)) if slip == value != truth]
    if not candidates: return ''
    fits = lambda i: sum(slips(*k)[i][1] == answers[k] for k in answers)
    return f": that is {slips(*key)[max(candidates, key=fits)][0]}"


def model_run(key, value):
    """What the model's pipeline does when the producer expects `value` bytes where landing_bytes(key) land:
    (the model's sentence, what a GPU would do)."""
    bm, bn, bk, cluster, size = key
    truth = landing_bytes(*key)
    setting = (f"In the course's model of the pipeline (course.mbarrier_pipeline.simulate, {SIMULATED['tiles']} tiles "
               f"of K through {SIMULATED['stages']} stages, {max(1, bm // CONSUMER_ROWS)} consumer warpgroups, "
               f"tile_bytes={truth}, expect_bytes={value})")
    try:
        simulate(SIMULATED['tiles'], SIMULATED['stages'], max(1, bm // CONSUMER_ROWS), tile_bytes=truth,
                 expect_bytes=value)
    except PipelineStuck as e:
        return (f"{setting}: {e}",
                f"On the GPU: a hang. The phase of full[s] waits for {value - truth} bytes that no copy will bring, so the "
                "consumers wait on it forever and the kernel never returns")
    except PipelineRace as e:
        return (f"{setting}: {e}",
                "On the GPU: the phase completes at the producer's arrive, before a byte has landed, and the wgmmas read "
                "whatever the stage holds by then (an older tile, or nothing yet): a wrong result")
    except RuntimeError as e:
        return (f"{setting}: {e}",
                f"On the GPU: the phase completes once {value} byte{'s' if value != 1 else ''} {'have' if value != 1 else 'has'} landed, before the last {truth - value}, so the "
                "consumers may multiply a stage that still holds part of an older tile (a wrong result that comes and "
                "goes with the timing); the late bytes then count down the next phase, so the error carries on from phase "
                "to phase")
    return f"{setting}: the pipeline finishes", ''     # not reached for value != truth: said if it happens


@exercise('13.1', 'how many bytes does full[s] expect',
          hints=("full[s] of a block completes when the bytes that land in THAT block's stage have landed, whoever copied "
                 "them. Which tiles land in a block's stage, and how many bytes is each (its elements times element_bytes)?",
                 "A's tile (bm x bk) lands in its own block only; all of B's tile (bk x bn) lands in every block of the "
                 "cluster, half of its boxes from each producer when cluster_blocks = 2. So the count does not depend "
                 "on cluster_blocks: (bm * bk + bk * bn) * element_bytes."))
def full_barrier_bytes(ns, report):
    name = 'expected_bytes'
    fn = need_function(ns, name, '(bm, bn, bk, cluster_blocks, element_bytes)')

    def ask(key):
        call = call_text(key)
        with running(call): value = fn(*key)
        if value is None: raise NotYet(f"{call} returned None: end the function with `return <the number of bytes>`")
        count = whole_numbers(value, call, ('the byte count',))
        if count < 0:
            raise NotYet(f"{call} returned {count}: a byte count cannot be negative (arrive.expect_tx raises the "
                         "barrier's count of bytes still to come by it)")
        return count
    keys = byte_questions()
    answers = asked_twice(keys, ask, name)
    report.ok(f"{name} returns a whole number of bytes, 0 or more, for each of the {len(keys)} stages asked (tiles from "
              f"64 to 256, bk 32 and 64, clusters of {and_list(CLUSTER_SIZES)} blocks, elements of "
              f"{and_list(ELEMENT_SIZES)} bytes), the same when asked again in another order")
    for key in keys:
        value, truth = answers[key], landing_bytes(*key)
        if value == truth: continue
        bm, bn, bk, cluster, size = key
        model, gpu = model_run(key, value)
        too = 'fewer' if value < truth else 'more'
        raise NotYet(f"{call_text(key)} returned {value}, {too} than the {truth} bytes that land in the block's stage "
                     f"(A's {bm} x {bk} tile, {bm * bk * size} bytes, and B's whole {bk} x {bn} tile, {bk * bn * size} "
                     f"bytes){what_was_counted(answers, key)}. {model}. {gpu}")
    report.ok(f"for all {len(keys)} it is the bytes that land in one block's stage, (bm * bk + bk * bn) * element_bytes, "
              "A's tile and all of B's whatever the cluster size")
    key = next(k for k in keys if k[3] == 2)
    run = simulate(SIMULATED['tiles'], SIMULATED['stages'], key[0] // CONSUMER_ROWS, tile_bytes=answers[key],
                   expect_bytes=answers[key])
    report.ok(f"with {name}'s count, the model's pipeline (simulate) runs {SIMULATED['tiles']} tiles through "
              f"{SIMULATED['stages']} stages with no hang and no race ({call_text(key)} = {answers[key]}; "
              f"{run.total:g} units)")


# --------------------------------------------------------------------------------------------------
# 13.2: LBO and SBO of B's descriptor
# --------------------------------------------------------------------------------------------------

K_PER_STAGE = (64, 16, 32, 128)     # bk: the kernels' 64 first
STAGE_COLUMNS = (64, 128, 256)      # bn: one box, two, four
DESCRIPTOR_FIELD_MAX = 16 * (2 ** 14 - 1)   # a stride field: 14 bits, in units of 16 bytes


def element_at(offset, bn, bk):
    "'B[k][n]' of the element TMA put at byte `offset` of B's stage, or where the byte lies when no element starts there."
    stage_bytes = bk * bn * 2
    if offset >= stage_bytes: return f"past the end of B's {stage_bytes}-byte stage"
    for k in range(bk):
        for n in range(bn):
            if b_stage_offset(k, n, bk) == offset: return f"where B[{k}][{n}] is"
    return "where no element of B starts"


def before_swizzle(address):
    "' (N before the swizzle)' where the 128-byte swizzle moved the address (it is its own inverse), else ''."
    plain = swizzle_128(address)
    return f" ({plain} before the swizzle)" if plain != address else ''


def first_wrong_read(leading_bytes, stride_bytes, bn, bk, k_step=16):
    """(k, n, where TMA put B[k][n], where wgmma reads it) of the first value a stage's wgmmas would read from the wrong
    place, in the order mismatches() visits them (wgmma by wgmma, column by column), or None."""
    for kk in range(bk // k_step):
        for n in range(bn):
            for k in range(k_step):
                read = wgmma_offset(n, k, 'MN', leading_bytes, stride_bytes, start=kk * k_step * SWIZZLE_BYTES)
                stored = b_stage_offset(kk * k_step + k, n, bk)
                if read != stored: return kk * k_step + k, n, stored, read
    return None


class OneArgument(tuple):
    "A key of asked_twice for a function of one argument: shown as (64), not (64,)."
    def __str__(self): return f"({self[0]})"


def learner_strides(fn, name):
    "{bk: (LBO, SBO)} from the learner's function, each a whole number a descriptor can hold."
    def ask(key):
        call = f"{name}{key}"
        with running(call): value = fn(*key)
        lbo, sbo = whole_numbers(value, call, ('LBO', 'SBO'))
        for what, v in (('LBO', lbo), ('SBO', sbo)):
            if v < 0: raise NotYet(f"{call} returned {what} = {v}: a byte offset in a descriptor is never negative")
        try: fields = descriptor_fields(descriptor(0, lbo, sbo))
        except ValueError as e:
            raise NotYet(f"{call} returned ({lbo}, {sbo}), which the descriptor cannot hold: {e} (as wgmma_layout.descriptor "
                         "says; the kernels' matrix_descriptor would silently drop the low 4 bits)") from None
        if (fields['LBO'], fields['SBO']) != (lbo, sbo):
            raise NotYet(f"{call} returned ({lbo}, {sbo}): a stride field of the descriptor is 14 bits of 16-byte units, "
                         f"at most {DESCRIPTOR_FIELD_MAX} bytes; this one reads back as LBO = {fields['LBO']}, "
                         f"SBO = {fields['SBO']}")
        return lbo, sbo
    answers = asked_twice([OneArgument((bk,)) for bk in K_PER_STAGE], ask, name)
    return {bk: answers[bk,] for bk in K_PER_STAGE}


@exercise('13.2', 'point wgmma at B',
          hints=("In the MN-major layout, wgmma finds value n of row k at (n // 64) * LBO + (k // 8) * SBO + (k % 8) * 128 "
                 "+ (n % 64) * 2 (before the swizzle). Where does TMA put column 64 of row 0 of the stage, and row 8 of "
                 "column 0?",
                 "Column 64 is the first of the second box, and a box is bk rows of 128 bytes: LBO = bk * 128. Row 8 "
                 "starts 8 rows of 128 bytes into its box: SBO = 1024, whatever bk is."))
def b_descriptor_strides(ns, report):
    name = 'b_strides'
    fn = need_function(ns, name, 'bk')
    strides = learner_strides(fn, name)
    report.ok(f"{name} returns two whole numbers for bk = {and_list(K_PER_STAGE, sort=False)}, multiples of 16 that the "
              "descriptor's fields hold, the same when asked again in another order")
    for bk in K_PER_STAGE:
        lbo, sbo = strides[bk]
        for bn in STAGE_COLUMNS:
            wrong = mismatches('B', lbo, sbo, bn=bn, bk=bk)
            if not wrong: continue
            k, n, stored, read = first_wrong_read(lbo, sbo, bn, bk)
            raise NotYet(f"with bk = {bk}, {name} gives LBO = {lbo}, SBO = {sbo}: the wgmmas of a stage of B (bk = {bk} "
                         f"rows of K, bn = {bn} columns) would read {wrong} of its {bk * bn} values from the wrong place "
                         f"(wgmma_layout.mismatches). The first: B[{k}][{n}] (row k = {k}, column n = {n}), which TMA put "
                         f"at byte {stored} of the stage (box {n // BOX_COLUMNS}, row {k}), but the descriptor points the "
                         f"wgmma at byte {read}{before_swizzle(read)}, {element_at(read, bn, bk)}")
    report.ok(f"for every bk asked and bn = {and_list(STAGE_COLUMNS)}, the wgmmas of a stage read every value "
              "of B where TMA put it: 0 mismatches (course.wgmma_layout.mismatches, swizzle included)")


# --------------------------------------------------------------------------------------------------
# 13.3: deal out a stretch of the last round (stream-K)
# --------------------------------------------------------------------------------------------------

ROLES = ('whole', 'finisher', 'contributor')
# (units, clusters, k_tiles, the rule's hand-over) of the plans asked about: 4096³ with the byte count's estimate,
# 8192³, two skinny problems, a single unit, edges that leave short units, and a small GPU of 3 clusters
STREAM_K_PLANS = ((256, 66, 64, 4), (1024, 66, 128, 20), (16, 66, 128, 20), (1, 66, 64, 20), (81, 66, 16, 4),
                  (5, 3, 40, 4))


# Stretches of a unit or more, which the last round never makes (it has fewer units than clusters) but the kernel's
# loop over pieces handles: whole units inside a stretch, and a stretch of exactly one unit
LONG_STRETCHES = ((0, 64, 64, 0), (10, 200, 64, 5), (64, 192, 64, 0), (3, 45, 16, 7))


def stretch_keys():
    """{(start, end, k_tiles, first_unit): [its pieces, as the model deals them]} for every cluster that shares the
    last round of each plan of STREAM_K_PLANS, then for LONG_STRETCHES."""
    keys = []
    for units, clusters, k_tiles, handover in STREAM_K_PLANS:
        p = plan(units, clusters, k_tiles, handover=handover)
        keys += [(stretch_start(p, c), stretch_start(p, c + 1), k_tiles, p.whole_units) for c in range(p.sk_clusters)]
    return {StretchQuestion(key): [tuple(q) for q in stretch_pieces(*key)] for key in keys + list(LONG_STRETCHES)}


class StretchQuestion(tuple):
    "The arguments (start, end, k_tiles, first_unit) of one call of stretch_pieces, shown with their names."
    def __str__(self):
        return '(' + ', '.join(f"{name}={v}" for name, v in zip(('start', 'end', 'k_tiles', 'first_unit'), self)) + ')'


class PieceList(tuple):
    "A learner's pieces, shown short: the first three and how many (a list that grows call by call can be long)."
    def __str__(self):
        return f"[{', '.join(map(str, self[:3]))}{', ...' if len(self) > 3 else ''}] ({len(self)} piece{'s' if len(self) != 1 else ''})"


def learner_pieces(value, call):
    "The learner's pieces as a PieceList of (unit, k_begin, k_end, role), each checked for its form."
    if value is None: raise NotYet(f"{call} returned None: end the function with `return pieces`")
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, '__iter__'):
        raise NotYet(f"{call} returned {value!r} ({type(value).__name__}): return a list of pieces, each "
                     "(unit, k_begin, k_end, role)")
    out = []
    for piece in value:
        if not isinstance(piece, (tuple, list)) or len(piece) != 4:
            raise NotYet(f"{call} returned a piece {piece!r}: each piece is 4 values, (unit, k_begin, k_end, role)")
        if isinstance(piece[0], str) or not isinstance(piece[3], str):
            raise NotYet(f"{call} returned a piece {tuple(piece)!r}: the values of a piece go in the order (unit, k_begin, "
                         "k_end, role), the role last")
        *numbers_, role = piece
        unit, k_begin, k_end = whole_numbers(tuple(numbers_), f"{call}, in its piece {tuple(piece)!r},",
                                             ('unit', 'k_begin', 'k_end'))
        if role not in ROLES:
            raise NotYet(f"{call} returned a piece with the role {role!r}: a role is one of {', '.join(map(repr, ROLES))}")
        out.append((unit, k_begin, k_end, role))
    return PieceList(out)


def stage_of(key, unit, k):
    "The stage, counted along the last round, of stage k of `unit`."
    start, end, k_tiles, first_unit = key
    return (unit - first_unit) * k_tiles + k


def unit_and_stage(key, s):
    "(unit, k) of stage s of the last round: stage_of's inverse."
    start, end, k_tiles, first_unit = key
    return first_unit + s // k_tiles, s % k_tiles


# (the piece's role, the role given): what the kernel would do
WRONG_ROLE = {
    ('contributor', 'finisher'): "store its partial sum as C after adding the sums of the clusters whose stretches "
                                 "start after its own inside the unit, while the unit's real finisher, the cluster that "
                                 "holds its first stage, waits forever for this cluster's flag: a hang",
    ('contributor', 'whole'): "store its partial sum as C, while the unit's real finisher, the cluster that holds its "
                              "first stage, waits forever for this cluster's flag: a hang",
    ('finisher', 'contributor'): "write its sums to the workspace for a finisher that does not exist: nobody stores C "
                                 "for this unit, and the sums of the clusters that hold its later stages are never read",
    ('finisher', 'whole'): "store its partial sum as C without adding the sums of the clusters that hold the unit's "
                           "later stages: a wrong C",
    ('whole', 'contributor'): "write its sums to the workspace for a finisher that does not exist: nobody stores C for "
                              "this unit",
    ('whole', 'finisher'): "wait for contributors, but no other cluster holds a stage of this unit: a finisher with "
                           "nothing to add is a 'whole' piece",
}


@exercise('13.3', 'deal out a stretch (stream-K)',
          hints=("Walk the stretch from `start` to `end`: stage s of the last round is stage s % k_tiles of unit "
                 "first_unit + s // k_tiles. A piece ends where the stretch ends or where its unit ends, whichever comes "
                 "first; then the next piece starts at stage 0 of the next unit. Make the list of pieces anew in each call "
                 "(not as a default argument, which every call shares).",
                 "k_begin = at % k_tiles and k_end = min(k_tiles, k_begin + end - at). The role follows from those two "
                 "alone: k_begin > 0 makes a 'contributor', else k_end < k_tiles a 'finisher', else 'whole'."))
def stream_k_stretch(ns, report):
    name = 'stretch_pieces'
    fn = need_function(ns, name, '(start, end, k_tiles, first_unit)')
    expected = stretch_keys()

    def ask(key):
        call = f"{name}{key}"
        with running(call): value = fn(*key)
        return learner_pieces(value, call)
    first = next(iter(expected))
    once, again = ask(first), ask(first)
    if len(again) > len(once) and again[:len(once)] == once:
        raise NotYet(f"{name}{first} returned {once} the first time and {again} when asked the same again: the list grows "
                     "from call to call. A default argument such as `pieces=[]` is one list, shared by every call")
    long_keys = [key for key in expected if key in LONG_STRETCHES]
    plan_keys = [key for key in expected if key not in LONG_STRETCHES]

    def answers_in_turn():
        "The plans' stretches, then the long ones: a loop that only a long stretch sends astray is found after the rest."
        yield from asked_twice(plan_keys, ask, name).items()
        yield from asked_twice(long_keys, ask, name).items()
    for key, pieces_ in answers_in_turn():
        start, end, k_tiles, first_unit = key
        call = f"{name}{key}"
        where = (f"(stage s of the last round is stage s % k_tiles of unit first_unit + s // k_tiles: stage {start} is "
                 f"stage {start % k_tiles} of unit {first_unit + start // k_tiles})")
        if not pieces_:
            raise NotYet(f"{call} returned no pieces: the cluster's stretch holds stages {start} to {end - 1} of the last "
                         f"round, {end - start} stages {where}, and the units they belong to would miss their products")
        for unit, k_begin, k_end, _ in pieces_:
            if 0 <= k_begin <= k_tiles and k_end == k_begin:
                last_unit, last_k = unit_and_stage(key, end - 1)
                raise NotYet(f"{call} returned the piece ({unit}, {k_begin}, {k_end}, ...), which holds no stage (k_begin "
                             f"= k_end): a loop that runs once too often makes one. The stretch's last stage, end - 1 = "
                             f"{end - 1}, is stage {last_k} of unit {last_unit}")
            if unit < first_unit:
                raise NotYet(f"{call} returned the piece ({unit}, {k_begin}, {k_end}, ...), of unit {unit}, before "
                             f"first_unit = {first_unit}: the last round's units are numbered from first_unit (stage s "
                             "is in unit first_unit + s // k_tiles)")
            if not 0 <= k_begin < k_end <= k_tiles:
                raise NotYet(f"{call} returned the piece ({unit}, {k_begin}, {k_end}, ...): a piece is stages [k_begin, "
                             f"k_end) of one unit, 0 <= k_begin < k_end <= k_tiles = {k_tiles}. A stretch that runs past "
                             "the end of a unit goes on in the next one (each unit's stages come from its own rows of A and "
                             "columns of B)")
        stages = [stage_of(key, u, k) for u, k0, k1, _ in pieces_ for k in range(k0, k1)]
        outside = sorted({s for s in stages if not start <= s < end})
        if outside:
            u, k = unit_and_stage(key, outside[0])
            raise NotYet(f"{call}: the pieces hold stage {k} of unit {u}, stage {outside[0]} of the last round, outside "
                         f"the stretch [{start}, {end}) {where}. Another cluster multiplies that stage, so its products "
                         f"would be added to unit {u} twice")
        twice = sorted({s for s in stages if stages.count(s) > 1})
        if twice:
            u, k = unit_and_stage(key, twice[0])
            raise NotYet(f"{call}: stage {k} of unit {u} is in two pieces: its products would be added to the unit twice")
        missing = sorted(set(range(start, end)) - set(stages))
        if missing:
            u, k = unit_and_stage(key, missing[0])
            raise NotYet(f"{call}: stage {k} of unit {u} ({len(missing)} stage{'s' if len(missing) > 1 else ''} in all) "
                         f"is in the stretch [{start}, {end}) but in none of the pieces {where}: no cluster would "
                         f"multiply it, and unit {u}'s C would lack its products")
        firsts = [stage_of(key, u, k0) for u, k0, _, _ in pieces_]
        if firsts != sorted(firsts):
            raise NotYet(f"{call} returned the pieces out of the stretch's order ({[p[:3] for p in pieces_]}): the producer "
                         "copies the stages in the order of the pieces, and a cluster must do its contributing piece first "
                         "and its finishing piece last, so that no cluster waits for one that is itself waiting")
        for unit, k_begin, k_end, role in pieces_:
            truth = piece_role(k_begin, k_end, k_tiles)
            if role == truth: continue
            shape = (f"it starts inside the unit (k_begin = {k_begin} > 0)" if truth == 'contributor' else
                     f"it starts at the unit's first stage and ends before its last (k_end = {k_end} < {k_tiles})"
                     if truth == 'finisher' else f"it holds all {k_tiles} stages of the unit")
            raise NotYet(f"{call} gave the piece ({unit}, {k_begin}, {k_end}) the role {role!r}, but {shape}: it is "
                         f"{'a ' if truth != 'whole' else ''}{truth!r}. As {role!r}, the cluster would {WRONG_ROLE[truth, role]}")
        if list(pieces_) != expected[key]:       # not reached when the checks above pass: said if it ever is
            raise NotYet(f"{call} returned {pieces_}, not the model's {expected[key]}")
    report.ok(f"{name} returns pieces of the form (unit, k_begin, k_end, role) for each of the {len(expected)} stretches "
              f"asked, the same when asked again in another order")
    report.ok(f"for every cluster of {len(STREAM_K_PLANS)} plans (course.stream_k: 4096³ and 8192³, skinny problems, "
              f"a single unit, a GPU of 3 clusters) and {len(LONG_STRETCHES)} stretches of a unit or more, the pieces "
              "cover the stretch exactly once, in order, each inside one unit, with the role the kernel gives it")

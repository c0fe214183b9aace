"""Wrong answers for notebook 13's exercises (the bytes a stage's full barrier expects, the strides of B's wgmma
descriptor, and the pieces of a stream-K stretch), and right answers written unusually."""
from . import Wrong

BYTES_RETURN = "return (a_tile + b_tile) * element_bytes"
B_TILE = "    b_tile = bk * bn "
LBO_LINE = "    leading = bk * row_bytes "
SBO_LINE = "    stride = 8 * row_bytes "
STRIDES_RETURN = "    return leading, stride\n"
PIECE_END = "        k_end = min(k_tiles, k_begin + end - at) "
PIECE_ROLE = "        role = 'contributor' if k_begin > 0 else 'finisher' if k_end < k_tiles else 'whole'"
PIECE_WHERE = "        unit, k_begin = first_unit + at // k_tiles, at % k_tiles "


# The sentence for a byte count that is right only where bm = bn: the first stage asked with bm != bn.
SQUARE_ONLY = (r"expected_bytes\(bm=128, bn=256, bk=64, cluster_blocks=1, element_bytes=2\) returned {value}, (?:fewer|more) than the "
               r"49152 bytes that land in the block's stage .*: that is {slip}.*which is right only for square tiles, bm = bn")


def bytes_returning(expression):
    "The solution of 13.1 with `return <expression>`."
    return (BYTES_RETURN, f"return {expression}")


def strides_returning(expression):
    "The solution of 13.2 with `return <expression>`."
    return (STRIDES_RETURN, f"    return {expression}\n")


WRONG = [
    # 13.1: exceptions of unusual kinds become sentences, not the checker's own traceback
    Wrong('13.1', "raises a BaseException of its own",
          change=(BYTES_RETURN, "raise type('Stop', (BaseException,), {})('not finished')"),
          expect=r"raised Stop at line \d+.*: not finished"),
    Wrong('13.1', "raises an exception whose message cannot be shown",
          change=(BYTES_RETURN, "raise type('Bad', (Exception,), {'__str__': lambda self: 1 / 0})()"),
          expect=r"raised Bad at line \d+.*its message could not be shown: str\(\) of it raised ZeroDivisionError"),
    Wrong('13.1', "raises NotImplementedError without a message",
          change=(BYTES_RETURN, "raise NotImplementedError"),
          expect=r"is not written yet \(NotImplementedError\)"),
    # 13.1: how many bytes does full[s] expect
    Wrong('13.1', "counts only what the block's own producer copies (B / cluster)",
          change=(B_TILE, "    b_tile = bk * bn // cluster_blocks "),
          expect=r"expected_bytes\(bm=128, bn=128, bk=64, cluster_blocks=2, element_bytes=2\) returned 24576, fewer than "
                 r"the 32768 bytes that land in the block's stage.*that is what this block's own producer copies \(A's "
                 r"tile and 1/2 of B's boxes\).*8192 bytes more arrived than phase 0 expected.*a wrong result that comes "
                 r"and goes"),
    Wrong('13.1', 'counts elements, not bytes',
          change=bytes_returning('a_tile + b_tile'),
          expect=r"cluster_blocks=1, element_bytes=2\) returned 16384, fewer than the 32768 bytes.*that is elements, not "
                 r"bytes: element_bytes is left out"),
    Wrong('13.1', 'ignores element_bytes (2 bytes hard-coded)',
          change=bytes_returning('(a_tile + b_tile) * 2'),
          expect=r"element_bytes=1\) returned 32768, more than the 16384 bytes.*2 bytes per element whatever "
                 r"element_bytes says.*PipelineStuck|element_bytes=1\) returned 32768, more.*stuck \(on a GPU: a hang\).*"
                 r"On the GPU: a hang\. The phase of full\[s\] waits for 16384 bytes that no copy will bring"),
    Wrong('13.1', "A's tile only",
          change=bytes_returning('a_tile * element_bytes'),
          expect=r"returned 16384, fewer than the 32768 bytes.*that is A's tile only"),
    Wrong('13.1', "the A tiles of the whole cluster",
          change=bytes_returning('(cluster_blocks * a_tile + b_tile) * element_bytes'),
          expect=r"cluster_blocks=2, element_bytes=2\) returned 49152, more than the 32768 bytes.*the A tiles of every "
                 r"block of the cluster.*On the GPU: a hang"),
    Wrong('13.1', "B's tile counted once per block of the cluster",
          change=bytes_returning('(a_tile + cluster_blocks * b_tile) * element_bytes'),
          expect=r"cluster_blocks=2, element_bytes=2\) returned 49152, more.*B's tile once per block of the cluster.*"
                 r"the pipeline is stuck \(on a GPU: a hang\)"),
    Wrong('13.1', 'a float from / (B split and summed back)',
          change=(B_TILE, "    b_tile = bk * bn / cluster_blocks * cluster_blocks "),
          expect=r"expected_bytes\(bm=128, bn=128, bk=64, cluster_blocks=1, element_bytes=2\) returned 32768\.0, a float: "
                 r"the byte count is a whole number"),
    Wrong('13.1', 'ignores its arguments: counts its calls',
          change=("def expected_bytes(bm, bn, bk, cluster_blocks, element_bytes=2):\n",
                  "CALLS = [0]\n\ndef expected_bytes(bm, bn, bk, cluster_blocks, element_bytes=2):\n"
                  "    CALLS[0] += 1\n    bm = bm + CALLS[0] // 109\n"),
          expect=r"expected_bytes\(bm=\d+, bn=\d+, bk=\d+, cluster_blocks=\d, element_bytes=\d\) returned \d+ the first time and \d+ when asked again in "
                 r"another order: the answer must depend only on the arguments"),
    Wrong('13.1', 'SystemExit (as exit() raises) for a cluster of 4',
          change=(B_TILE, "    if cluster_blocks == 4: raise SystemExit\n" + B_TILE),
          expect=r"expected_bytes\(bm=128, bn=256, bk=64, cluster_blocks=4, element_bytes=2\) called exit\(\).*: "
                 r"return a value instead"),
    Wrong('13.1', 'no return',
          change=bytes_returning('None'),
          expect=r"returned None: end the function with `return <the number of bytes>`"),
    Wrong('13.1', 'a negative count (the bytes still to come written as a debt)',
          change=bytes_returning('-(a_tile + b_tile) * element_bytes'),
          expect=r"returned -32768: a byte count cannot be negative"),
    Wrong('13.1', "B's tile counted as bk x bm (right only for square tiles)",
          change=(B_TILE, "    b_tile = bk * bm "),
          expect=SQUARE_ONLY.format(value=32768, slip=r"B's tile counted as bk x bm: bm where bn belongs \(B's tile is bk x bn = 64 x 256\)")),
    Wrong('13.1', "A's tile counted as bn x bk (right only for square tiles)",
          change=("    a_tile = bm * bk ", "    a_tile = bn * bk "),
          expect=SQUARE_ONLY.format(value=65536, slip=r"A's tile counted as bn x bk: bn where bm belongs \(A's tile is bm x bk = 128 x 64\)")),
    Wrong('13.1', "A's tile counted twice, for B's too",
          change=bytes_returning('2 * a_tile * element_bytes'),
          expect=SQUARE_ONLY.format(value=32768, slip=r"B's tile counted as bk x bm: bm where bn belongs")),
    Wrong('13.1', "factored, with bm twice: (bm + bm) * bk",
          change=bytes_returning('(bm + bm) * bk * element_bytes'),
          expect=SQUARE_ONLY.format(value=32768, slip=r"B's tile counted as bk x bm: bm where bn belongs")),
    Wrong('13.1', 'two producers written in (half of B from each of 2, whatever the cluster)',
          change=(B_TILE, "    b_tile = bk * bn // cluster_blocks * 2 "),
          expect=r"cluster_blocks=1, element_bytes=2\) returned 49152, more than the 32768 bytes.*On the GPU: a hang"),

    # 13.2: point wgmma at B
    Wrong('13.2', 'LBO and SBO swapped',
          change=strides_returning('stride, leading'),
          expect=r"with bk = 64, b_strides gives LBO = 1024, SBO = 8192: the wgmmas of a stage of B \(bk = 64 rows of K, "
                 r"bn = 64 columns\) would read 2048 of its 4096 values from the wrong place.*The first: B\[8\]\[0\] "
                 r"\(row k = 8, column n = 0\), which TMA put at byte 1024 of the stage \(box 0, row 8\), but the "
                 r"descriptor points the wgmma at byte 8192, past the end of B's 8192-byte stage"),
    Wrong('13.2', 'LBO = 128 (one row, not one box)',
          change=(LBO_LINE, "    leading = row_bytes "),
          expect=r"with bk = 64, b_strides gives LBO = 128, SBO = 1024: .*bn = 128 columns\) would read 4096 of its 8192 "
                 r"values from the wrong place.*The first: B\[0\]\[64\] .*at byte 8192 of the stage \(box 1, row 0\), but "
                 r"the descriptor points the wgmma at byte 144 \(128 before the swizzle\), where B\[1\]\[0\] is"),
    Wrong('13.2', 'SBO = bk * 128 (a box, not 8 rows)',
          change=(SBO_LINE, "    stride = bk * row_bytes "),
          expect=r"with bk = 64, b_strides gives LBO = 8192, SBO = 8192: .*bn = 64 columns\).*The first: B\[8\]\[0\].*"
                 r"byte 1024 of the stage.*points the wgmma at byte 8192"),
    Wrong('13.2', 'right only for bk = 64 (the strides of lesson 13 written in)',
          change=strides_returning('8192, 1024'),
          expect=r"with bk = 16, b_strides gives LBO = 8192, SBO = 1024: .*bn = 128 columns\) would read 1024 of its 2048 "
                 r"values.*The first: B\[0\]\[64\].*at byte 2048 of the stage \(box 1, row 0\), but the descriptor points "
                 r"the wgmma at byte 8192, past the end"),
    Wrong('13.2', 'counts elements, not bytes',
          change=strides_returning('bk * 64, 8 * 64'),
          expect=r"with bk = 64, b_strides gives LBO = 4096, SBO = 512: .*The first: B\[8\]\[0\].*byte 1024.*points the "
                 r"wgmma at byte 576 \(512 before the swizzle\), where B\[4\]\[0\] is"),
    Wrong('13.2', 'the strides in 16-byte units (as the descriptor encodes them)',
          change=strides_returning('leading // 16, stride // 16'),
          expect=r"with bk = 64, b_strides gives LBO = 512, SBO = 64: "),
    Wrong('13.2', 'SBO = 2, the step between two values',
          change=(SBO_LINE, "    stride = 2 "),
          expect=r"b_strides\(64\) returned \(8192, 2\), which the descriptor cannot hold: the descriptor holds SBO in "
                 r"units of 16 bytes; 2 is not a multiple of 16"),
    Wrong("13.2", "the global matrix's strides (4096 columns), not the stage's",
          change=strides_returning('bk * 4096 * 2, 8 * 4096 * 2'),
          expect=r"b_strides\(64\) returned \(524288, 65536\): a stride field of the descriptor is 14 bits of 16-byte "
                 r"units, at most 262128 bytes; this one reads back as LBO = 0, SBO = 65536"),
    Wrong('13.2', 'a float LBO (bk / 64 boxes of 8192 bytes)',
          change=(LBO_LINE, "    leading = bk / 64 * 8192 "),
          expect=r"b_strides\(64\) returned \(8192\.0, 1024\), a float: LBO and SBO are whole numbers"),
    Wrong('13.2', 'ignores its argument: counts its calls',
          change=("def b_strides(bk):\n", "CALLS = [0]\n\ndef b_strides(bk):\n    CALLS[0] += 1\n    bk = bk + 16 * (CALLS[0] > 4)\n"),
          expect=r"b_strides\(\d+\) returned \(\d+, 1024\) the first time and \(\d+, 1024\) when asked again in another "
                 r"order"),
    Wrong('13.2', 'sys.exit(1) where bk is not 64',
          change=(LBO_LINE, "    import sys\n    if bk != 64: sys.exit(1)\n" + LBO_LINE),
          expect=r"b_strides\(16\) called exit\(\) \(1\).*: return a value instead"),
    Wrong('13.2', 'one number returned (LBO only)',
          change=strides_returning('leading'),
          expect=r"b_strides\(64\) returned 8192 \(int\): return 2 whole numbers, `return LBO, SBO`"),
    Wrong('13.2', 'a numpy array returned',
          change=strides_returning("__import__('numpy').array([leading, stride])"),
          expect=r"returned array\(\[8192, 1024\]\) \(ndarray\): return 2 whole numbers.*return its `\.tolist\(\)`"),
    Wrong('13.1', 'a numpy array returned',
          change=bytes_returning("__import__('numpy').array((a_tile + b_tile) * element_bytes)"),
          expect=r"\(ndarray\): return whole numbers, Python ints \(a numpy array or a tensor: return its `\.tolist\(\)`\)"),
    Wrong('13.2', 'SBO = bk * 16: right for bk = 64 only',
          change=strides_returning('bk * 128, bk * 16'), expect=r"b_strides\(16\)|bk = 16"),
    Wrong('13.2', 'the box capped at 64 rows: right up to bk = 64 only',
          change=strides_returning('min(bk, 64) * 128, 1024'), expect=r"b_strides\(128\)|bk = 128"),
]

WRONG += [
    # 13.3: deal out a stretch (stream-K)
    Wrong('13.3', 'the stretch not cut where a unit ends',
          change=(PIECE_END, "        k_end = k_begin + end - at "),
          expect=r"stretch_pieces\(start=56, end=112, k_tiles=64, first_unit=198\) returned the piece \(198, 56, 112, \.\.\.\): "
                 r"a piece is stages \[k_begin, k_end\) of one unit, 0 <= k_begin < k_end <= k_tiles = 64.*A stretch that runs past the end of a unit goes on in the next one"),
    Wrong('13.3', 'the first piece of a stretch always a contributor',
          change=(PIECE_ROLE, "        role = 'contributor' if k_begin > 0 or not pieces else 'finisher' if k_end < k_tiles else 'whole'"),
          expect=r"stretch_pieces\(start=0, end=56, k_tiles=64, first_unit=198\) gave the piece \(198, 0, 56\) the role "
                 r"'contributor', but it starts at the unit's first stage and ends before its last \(k_end = 56 < 64\): it is a "
                 r"'finisher'\. As 'contributor', the cluster would write its sums to the workspace for a finisher that does "
                 r"not exist: nobody stores C for this unit"),
    Wrong('13.3', "a finisher called 'whole' (roles swapped)",
          change=(PIECE_ROLE, "        role = 'contributor' if k_begin > 0 else 'whole' if k_end < k_tiles else 'finisher'"),
          expect=r"gave the piece \(198, 0, 56\) the role 'whole'.*it is a 'finisher'\. As 'whole', the cluster would store its "
                 r"partial sum as C without adding the sums of the clusters that hold the unit's later stages: a wrong C"),
    Wrong('13.3', 'the last piece of a stretch always the finisher',
          change=(PIECE_ROLE, "        role = 'finisher' if at + k_end - k_begin == end else 'contributor' if k_begin > 0 else 'whole'"),
          expect=r"gave the piece \(\d+, [1-9]\d*, \d+\) the role 'finisher', but it starts inside the unit \(k_begin = \d+ > 0\): "
                 r"it is a 'contributor'\. As 'finisher'.*waits forever for this cluster's flag: a hang"),
    Wrong('13.3', 'first_unit left out',
          change=(PIECE_WHERE, "        unit, k_begin = at // k_tiles, at % k_tiles "),
          expect=r"stretch_pieces\(start=0, end=56, k_tiles=64, first_unit=198\) returned the piece \(0, 0, 56, \.\.\.\), of unit "
                 r"0, before first_unit = 198: the last round's units are numbered from first_unit"),
    Wrong('13.3', 'k counted from the stretch, not the unit',
          change=(PIECE_WHERE, "        unit, k_begin = first_unit + at // k_tiles, at - start "),
          expect=r"stretch_pieces\(start=56, end=112, k_tiles=64, first_unit=198\): the pieces hold stage 0 of unit 198, stage 0 "
                 r"of the last round, outside the stretch \[56, 112\).*stage 56 is stage 56 of unit 198"),
    Wrong('13.3', 'the whole stretch in one piece of its first unit',
          body="def stretch_pieces(start, end, k_tiles, first_unit):\n"
               "    k_begin = start % k_tiles\n"
               "    return [(first_unit + start // k_tiles, k_begin, min(k_tiles, k_begin + end - start), "
               "'contributor' if k_begin else 'finisher')]\n",
          expect=r"stretch_pieces\(start=56, end=112, k_tiles=64, first_unit=198\): stage 0 of unit 199 \(48 stages in all\) "
                 r"is in the stretch \[56, 112\) but in none of the pieces.*no cluster would multiply it"),
    Wrong('13.3', 'the pieces in reverse order',
          change=("    return pieces\n", "    return pieces[::-1]\n"),
          expect=r"returned the pieces out of the stretch's order.*its contributing piece first and its finishing piece "
                 r"last, so that no cluster waits for one that is itself waiting"),
    Wrong('13.3', 'a role misspelt',
          change=(PIECE_ROLE, "        role = 'contributer' if k_begin > 0 else 'finisher' if k_end < k_tiles else 'whole'"),
          expect=r"returned a piece with the role 'contributer': a role is one of 'whole', 'finisher', 'contributor'"),
    Wrong('13.3', 'pieces as (unit, k_begin, k_end) without a role',
          change=("        pieces.append((unit, k_begin, k_end, role))", "        pieces.append((unit, k_begin, k_end))"),
          expect=r"returned a piece \(198, 0, 56\): each piece is 4 values, \(unit, k_begin, k_end, role\)"),
    Wrong('13.3', 'a float unit from /',
          change=(PIECE_WHERE, "        unit, k_begin = first_unit + (at - at % k_tiles) / k_tiles, at % k_tiles "),
          expect=r"a float: unit and k_begin and k_end are whole numbers"),
    Wrong('13.3', "only two roles: a whole unit called a finisher",
          change=(PIECE_ROLE, "        role = 'contributor' if k_begin > 0 else 'finisher'"),
          expect=r"stretch_pieces\(start=0, end=64, k_tiles=64, first_unit=0\) gave the piece \(0, 0, 64\) the role 'finisher', "
                 r"but it holds all 64 stages of the unit: it is 'whole'\. As 'finisher', the cluster would wait for "
                 r"contributors, but no other cluster holds a stage of this unit"),
    Wrong('13.3', 'at most two pieces: the rest of the stretch as one piece of the next unit',
          body="def stretch_pieces(start, end, k_tiles, first_unit):\n"
               "    unit, k0 = first_unit + start // k_tiles, start % k_tiles\n"
               "    k1 = min(k_tiles, k0 + end - start)\n"
               "    pieces = [(unit, k0, k1, 'contributor' if k0 else 'finisher' if k1 < k_tiles else 'whole')]\n"
               "    rest = end - start - (k1 - k0)\n"
               "    if rest > 0: pieces.append((unit + 1, 0, rest, 'finisher' if rest < k_tiles else 'whole'))\n"
               "    return pieces\n",
          expect=r"stretch_pieces\(start=10, end=200, k_tiles=64, first_unit=5\) returned the piece \(6, 0, 136, \.\.\.\): a "
                 r"piece is stages \[k_begin, k_end\) of one unit.*A stretch that runs past the end of a unit goes on in the next one"),
    Wrong('13.3', 'units counted to end // k_tiles: an empty piece where a stretch ends on a unit boundary',
          body="def stretch_pieces(start, end, k_tiles, first_unit):\n"
               "    pieces = []\n"
               "    for u in range(start // k_tiles, end // k_tiles + 1):\n"
               "        k_begin, k_end = max(start, u * k_tiles) - u * k_tiles, min(end, (u + 1) * k_tiles) - u * k_tiles\n"
               "        role = 'contributor' if k_begin > 0 else 'finisher' if k_end < k_tiles else 'whole'\n"
               "        pieces.append((first_unit + u, k_begin, k_end, role))\n"
               "    return pieces\n",
          expect=r"returned the piece \(\d+, 0, 0, \.\.\.\), which holds no stage \(k_begin = k_end\): a loop that runs once "
                 r"too often makes one"),
    Wrong('13.3', 'a default argument pieces=[] (the list grows call by call)',
          body="def stretch_pieces(start, end, k_tiles, first_unit, pieces=[]):\n"
               "    at = start\n"
               "    while at < end:\n"
               "        unit, k_begin = first_unit + at // k_tiles, at % k_tiles\n"
               "        k_end = min(k_tiles, k_begin + end - at)\n"
               "        pieces.append((unit, k_begin, k_end, 'contributor' if k_begin else 'finisher' if k_end < k_tiles else 'whole'))\n"
               "        at += k_end - k_begin\n"
               "    return pieces\n",
          expect=r"returned \[\(198, 0, 56, 'finisher'\)\] \(1 piece\) the first time and \[.*\] \(2 pieces\) when asked the "
                 r"same again: the list grows from call to call\. A default argument such as `pieces=\[\]`"),
    Wrong('13.3', 'the role first in each piece',
          change=("        pieces.append((unit, k_begin, k_end, role))", "        pieces.append((role, unit, k_begin, k_end))"),
          expect=r"returned a piece \('finisher', 198, 0, 56\): the values of a piece go in the order \(unit, k_begin, k_end, "
                 r"role\), the role last"),
    Wrong('13.3', 'a stage dropped at each cut (k_end - 1)',
          change=("        at += k_end - k_begin", "        at += k_end - k_begin + 1"),
          expect=r"stretch_pieces\(start=56, end=112, k_tiles=64, first_unit=198\): stage 0 of unit 199 \(1 stage in all\) is in "
                 r"the stretch \[56, 112\) but in none of the pieces"),
]

# Right answers written unusually: each must not be 'not yet'.
RIGHT = [
    Wrong('13.3', 'numpy integers and numpy strings',
          change=("        pieces.append((unit, k_begin, k_end, role))",
                  "        np = __import__('numpy')\n        pieces.append((np.int64(unit), np.int32(k_begin), np.int64(k_end), np.str_(role)))"),
          expect=''),
    Wrong('13.3', 'a generator of lists, the role from a table',
          body="def stretch_pieces(start, end, k_tiles, first_unit):\n"
               "    at = start\n"
               "    while at < end:\n"
               "        unit, k_begin = divmod(at, k_tiles)\n"
               "        k_end = min(k_tiles, k_begin + end - at)\n"
               "        yield [first_unit + unit, k_begin, k_end, {(True, False): 'contributor', (True, True): 'contributor', "
               "(False, True): 'finisher', (False, False): 'whole'}[k_begin > 0, k_end < k_tiles]]\n"
               "        at += k_end - k_begin\n", expect=''),
    Wrong('13.1', "each producer's share of B added up",
          change=(B_TILE, "    b_tile = sum(bk * bn // cluster_blocks for producer in range(cluster_blocks)) "), expect=''),
    Wrong('13.1', 'factored, and a numpy integer',
          change=bytes_returning('__import__("numpy").int64(element_bytes * bk * (bm + bn))'), expect=''),
    Wrong('13.1', "bn and bm exchanged in both tiles (bn x bk + bk x bm: the same sum)",
          change=bytes_returning('(bn * bk + bk * bm) * element_bytes'), expect=''),
    Wrong('13.1', 'the stage bytes from a tile shape table',
          change=bytes_returning('sum(rows * cols for rows, cols in ((bm, bk), (bk, bn))) * element_bytes'), expect=''),
    Wrong('13.2', 'bit shifts, returned as a list',
          change=strides_returning('[bk << 7, 1 << 10]'), expect=''),
    Wrong('13.2', 'a box as 64 bf16 columns of 2 bytes',
          change=(LBO_LINE, "    leading = bk * 64 * 2 "), expect=''),
    Wrong('13.2', "the strides read off where TMA put B's values (the model's b_stage_offset)",
          change=strides_returning("__import__('course.wgmma_layout').wgmma_layout.b_stage_offset(0, 64, bk), "
                                   "__import__('course.wgmma_layout').wgmma_layout.b_stage_offset(8, 0, bk)"), expect=''),
    Wrong('13.2', 'numpy integers in a list',
          change=strides_returning("list(map(__import__('numpy').int64, (leading, stride)))"), expect=''),
    Wrong('13.2', 'a named tuple',
          change=strides_returning("__import__('collections').namedtuple('Strides', 'lbo sbo')(leading, stride)"), expect=''),
]

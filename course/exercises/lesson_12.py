"""The exercises of notebook 12: which lane of a warp holds which element of an mma.sync operand, and a swizzle
that keeps ldmatrix free of bank conflicts. Both are checked on a CPU, against the course's models:
course/tensor_core_fragments.py (the PTX ISA's fragments, one warp's mma, ldmatrix's passes) and
course/shared_banks.py (the banks)."""
import numbers, random

from ..shared_banks import BANKS, conflict_ways, passes
from ..tensor_core_fragments import M16N8K16, WARP, element, from_registers, ldmatrix_passes, round_to_bf16, \
    to_registers, warp_mma
from .parts import NotYet, need_function, running
from .registry import exercise


def whole_numbers(value, call, names):
    """`value`, what the learner's `call` returned, as a tuple of ints, one for each of `names` (just the int where
    there is one name); a sentence if it is something else."""
    count = len(names)
    as_list = " (a numpy array or a tensor: return its `.tolist()`)" if hasattr(value, 'tolist') and not isinstance(value, numbers.Number) else ''
    if value is None: raise NotYet(f"{call} returned None: end the function with `return {', '.join(names)}`")
    parts = value if count > 1 else (value,)
    if count > 1 and (not isinstance(value, (tuple, list)) or len(value) != count):
        raise NotYet(f"{call} returned {value!r} ({type(value).__name__}): return {count} whole numbers, "
                     f"`return {', '.join(names)}`{as_list}")
    if any(isinstance(v, float) for v in parts):
        raise NotYet(f"{call} returned {value!r}, a float: {' and '.join(names)} {'are whole numbers' if count > 1 else 'is a whole number'} "
                     "(ints); `/` always gives a float, `//` or `>>` keep an int")
    if not all(isinstance(v, numbers.Integral) for v in parts):
        kinds = ', '.join(type(v).__name__ for v in parts)
        raise NotYet(f"{call} returned {value!r} ({kinds}): return whole numbers, Python ints{as_list}")
    return tuple(int(v) for v in parts) if count > 1 else int(value)


# --------------------------------------------------------------------------------------------------
# 12.1: the map of mma.sync.m16n8k16's A fragment
# --------------------------------------------------------------------------------------------------

MMA_SEED = 11        # the random tiles of 12.1's warp_mma: the same in every run, so a sentence does not change


ASK_AGAIN_SEED = 1111  # the shuffled order of the second round of calls: the same in every run


def asked_twice(keys, ask, name):
    """{key: ask(key)} for every key (a tuple of arguments) in order, then every key asked again in a shuffled order:
    an answer that depends on the calls before it (a counter, a list popped in turn) rather than on its arguments
    gives itself away. Raises NotYet where the two answers differ."""
    answers = {key: ask(key) for key in keys}
    again = list(answers)
    random.Random(ASK_AGAIN_SEED).shuffle(again)
    for key in again:
        second = ask(key)
        if second != answers[key]:
            raise NotYet(f"{name}{key} returned {answers[key]} the first time and {second} when asked again in another "
                         f"order: the answer must depend only on the arguments (no counters or lists used up call by call)")
    return answers


def learner_fragment_map(fn, name, shape, operand):
    "{(lane, i): (row, col)} from the learner's map function, each call checked: two ints inside the operand's tile."
    rows, cols = shape.size(operand)
    what = f"{operand.upper()}'s {rows} x {cols} tile"

    def ask(key):
        call = f"{name}{key}"
        with running(call): value = fn(*key)
        r, c = whole_numbers(value, call, ('row', 'col'))
        if not (0 <= r < rows and 0 <= c < cols):
            raise NotYet(f"{call} returned ({r}, {c}), outside {what}: rows run 0..{rows - 1} and columns "
                         f"0..{cols - 1}")
        return r, c
    return asked_twice([(lane, i) for lane in range(WARP) for i in range(shape.elements(operand))], ask, name)


def first_duplicate(cells):
    "((lane, i), (lane, i), cell) of the first two elements mapped to one cell, or None."
    seen = {}
    for key, cell in cells.items():
        if cell in seen: return seen[cell], key, cell
        seen[cell] = key
    return None


def random_tile(shape, operand, generator):
    "A random tile of `operand`, its values bf16 numbers (as mma.sync reads them), as nested lists of floats."
    import numpy as np
    rows, cols = shape.size(operand)
    return round_to_bf16(generator.standard_normal((rows, cols)).astype(np.float32)).astype(float).tolist()


def product_with_a_map(cells, shape=M16N8K16):
    """D = A.B + C from one warp's model mma on random tiles, A's registers filled by `cells` ({(lane, i): (row, col)})
    and B's and C's by the PTX ISA's maps: (D as nested lists, A @ B + C computed directly)."""
    import numpy as np
    generator = np.random.default_rng(MMA_SEED)
    a, b, c = (random_tile(shape, op, generator) for op in 'abc')
    a_regs = [[a[r][col] for (r, col) in (cells[lane, i] for i in range(shape.elements('a')))] for lane in range(WARP)]
    d = from_registers(shape, 'd', warp_mma(shape, a_regs, to_registers(shape, 'b', b), to_registers(shape, 'c', c)))
    expected = [[c[r][j] + sum(a[r][x] * b[x][j] for x in range(shape.k)) for j in range(shape.n)] for r in range(shape.m)]
    return d, expected


def product_sentence(d, expected):
    "'the model's warp_mma gets D = A.B + C wrong in N of 128 elements (D[r][c] is x, expected y)', or None where D is right."
    wrong = [(r, j) for r in range(len(d)) for j in range(len(d[0]))
             if abs(d[r][j] - expected[r][j]) > 1e-9 * (1 + abs(expected[r][j]))]
    if not wrong: return None
    r, j = wrong[0]
    return (f"the model's warp_mma gets D = A.B + C wrong in {len(wrong)} of {len(d) * len(d[0])} elements (D[{r}][{j}] is "
            f"{d[r][j]:.4g}, expected {expected[r][j]:.4g})")


def which_elements(wrong, per_lane):
    "'for elements 2, 3, 6 and 7 of every lane' or 'for 40 of the 256 (lane, element) pairs'."
    elements = sorted({i for _, i in wrong})
    if len(wrong) == WARP * len(elements):
        names = ', '.join(map(str, elements[:-1])) + (' and ' if len(elements) > 1 else '') + str(elements[-1])
        return f"for element{'s' if len(elements) > 1 else ''} {names} of every lane"
    return f"for {len(wrong)} of the {WARP * per_lane} (lane, element) pairs"


@exercise('12.1', 'which lane holds which element',
          hints=("Elements 0 to 3 of A sit where C's elements 0 to 3 sit, in A's left 8 columns (k = 0..7); elements 4 to 7 "
                 "repeat that pattern in its right 8 columns (k = 8..15). Draw it: draw_fragments(M16N8K16, lane=5).",
                 "Take C's rule with i % 4 in place of i, and add 8 to the column for i >= 4: "
                 "row = group + 8 * (i % 4 >= 2), col = 2 * thread + i % 2 + 8 * (i >= 4)."))
def a_fragment_map(ns, report):
    shape, operand, name = M16N8K16, 'a', 'a_fragment_element'
    fn = need_function(ns, name, '(lane, i)')
    per_lane = shape.elements(operand)
    cells = learner_fragment_map(fn, name, shape, operand)
    twice = first_duplicate(cells)
    if twice:
        (l1, i1), (l2, i2), (r, c) = twice
        raise NotYet(f"{name}({l1}, {i1}) and {name}({l2}, {i2}) both return ({r}, {c}): two registers cannot hold the "
                     f"same element of A, and then some other element is held by none. The 32 lanes x {per_lane} "
                     f"elements must cover A's {shape.m * shape.k} elements once each")
    report.ok(f"{name} returns a (row, col) inside A's 16 x 16 tile for each of the 32 lanes x {per_lane} elements, "
              "each element of A once")
    truth = {(lane, i): element(shape, operand, lane, i) for lane in range(WARP) for i in range(per_lane)}
    wrong = [key for key in cells if cells[key] != truth[key]]
    d, expected = product_with_a_map(cells, shape)
    product = product_sentence(d, expected)
    if wrong:
        lane, i = wrong[0]
        (r, c), (tr, tc) = cells[lane, i], truth[lane, i]
        consequence = f". Registers filled by your map hand mma.sync a scrambled A: on random bf16 tiles, {product}" if product else ''
        raise NotYet(f"lane {lane}, element {i}: you say ({r}, {c}); mma.sync reads A[{tr}][{tc}] there (your map "
                     f"differs {which_elements(wrong, per_lane)}){consequence}")
    report.ok(f"it is mma.sync.m16n8k16's map of A for all {WARP * per_lane} (lane, element) pairs (the PTX ISA's layout, "
              "as course.tensor_core_fragments.element gives it)")
    if product: raise NotYet(f"registers filled by your map: {product}")   # the model's own map: not expected, said if it happens
    report.ok("registers filled by your map: the model's warp_mma gives D = A.B + C right, all 128 elements, on random "
              "bf16 tiles")


# --------------------------------------------------------------------------------------------------
# 12.2: a swizzle of a shared tile's 16-byte chunks, by the bank model
# --------------------------------------------------------------------------------------------------

ROW_ELEMENTS, ELEMENT_BYTES = 64, 2                 # a row of the tile: 64 bf16 values, 128 bytes
CHUNK_ELEMENTS = 16 // ELEMENT_BYTES                # a 16-byte chunk: 8 values, the row an ldmatrix lane names
CHUNKS = ROW_ELEMENTS // CHUNK_ELEMENTS             # 8 chunks per row
TILE_ROWS = 128                                     # the rows of the tile checked
PIECE_ROWS = 16                                     # an ldmatrix.x4 of A: a 16 x 16 piece, two chunks wide
WORDS_PER_CHUNK = 16 // 4


def learner_swizzle_table(fn, name):
    "table[row][chunk] = the place the learner's swizzle stores that chunk at, each call checked: an int in 0..7."
    def ask(key):
        call = f"{name}{key}"
        with running(call): value = fn(*key)
        place = whole_numbers(value, call, ('place',))
        if not 0 <= place < CHUNKS:
            raise NotYet(f"{call} returned {place}: a row of the tile has {CHUNKS} chunks of 16 bytes, so the place "
                         f"a chunk is stored at must be 0..{CHUNKS - 1}")
        return place
    places = asked_twice([(row, chunk) for row in range(TILE_ROWS) for chunk in range(CHUNKS)], ask, name)
    return [[places[row, chunk] for chunk in range(CHUNKS)] for row in range(TILE_ROWS)]


def chunk_offset(table, row, chunk):
    "The element offset at which chunk `chunk` of row `row` starts in the swizzled tile."
    return row * ROW_ELEMENTS + table[row][chunk] * CHUNK_ELEMENTS


def ldmatrix_row_starts(table, row0, chunk0):
    "The 32 row addresses (element offsets) of an ldmatrix.x4 of the 16 x 16 piece at rows row0.., chunks chunk0, chunk0 + 1."
    return [chunk_offset(table, row0 + lane % PIECE_ROWS, chunk0 + lane // PIECE_ROWS) for lane in range(WARP)]


def matrix_rows_and_chunk(row0, chunk0, j):
    "The 8 rows and the chunk that 8 x 8 matrix j (lanes 8j..8j+7) of that ldmatrix.x4 reads."
    first = row0 + 8 * (j % 2)
    return list(range(first, first + 8)), chunk0 + j // 2


def chunk_words(table, row, chunk):
    "The 4-byte words of shared memory that chunk `chunk` of row `row` occupies."
    start = chunk_offset(table, row, chunk) * ELEMENT_BYTES // 4
    return list(range(start, start + WORDS_PER_CHUNK))


def worst_ldmatrix(table):
    "(ways, row0, chunk0, j) of the ldmatrix.x4 matrix with the most passes, the first of equals."
    worst = None
    for row0 in range(0, TILE_ROWS, PIECE_ROWS):
        for chunk0 in range(0, CHUNKS, 2):
            for j, ways in enumerate(ldmatrix_passes(ldmatrix_row_starts(table, row0, chunk0), 4, ELEMENT_BYTES)):
                if worst is None or ways > worst[0]: worst = (ways, row0, chunk0, j)
    return worst


def conflict_sentence(table, name, ways, row0, chunk0, j):
    "Why that ldmatrix.x4 meets a `ways`-way bank conflict, from the bank model, in a sentence."
    rows, chunk = matrix_rows_and_chunk(row0, chunk0, j)
    words = [w for r in rows for w in chunk_words(table, r, chunk)]
    _, bank, bank_words = conflict_ways(words)
    crowded = [r for r in rows if set(chunk_words(table, r, chunk)) & set(bank_words)]
    places = ', '.join(str(table[r][chunk]) for r in rows)
    together = f"{crowded[0]} and {crowded[1]} both need" if len(crowded) == 2 else f"{', '.join(map(str, crowded))} all need"
    an = 'an' if ways in (8, 11, 18) else 'a'
    return (f"with your {name}, an ldmatrix.x4 of the 16 x 16 piece at rows {row0}..{row0 + PIECE_ROWS - 1}, chunks {chunk0} "
            f"and {chunk0 + 1} meets {an} {ways}-way bank conflict: its 8 x 8 matrix {j} reads chunk {chunk} of rows "
            f"{rows[0]}..{rows[-1]}, which those rows store at places {places}. A row is {ROW_ELEMENTS * ELEMENT_BYTES} "
            f"bytes, all {BANKS} banks, so a place is the same 4 banks in every row: rows {together} bank {bank}, {ways} "
            f"different words, {ways} passes instead of 1. "
            "The 8 rows one matrix reads must keep its chunk at 8 different places")


@exercise('12.2', 'swizzle away the bank conflicts',
          hints=(f"A row is 128 bytes, the width of all {BANKS} banks, so a place in the row is the same 4 banks in every "
                 "row. The 8 rows that one 8 x 8 matrix of an ldmatrix reads (8 consecutive rows) must store its chunk at 8 "
                 "different places: let the place depend on row % 8, and keep each row a permutation of 0..7.",
                 "XOR the chunk with row % 8: for one chunk, 8 consecutive rows give 8 different places, and for one row "
                 "chunk -> chunk ^ (row % 8) is its own inverse, so a permutation of 0..7. (chunk + row) % 8 works too."))
def swizzle_chunks(ns, report):
    name = 'swizzle'
    fn = need_function(ns, name, '(row, chunk)')
    table = learner_swizzle_table(fn, name)
    for row, places in enumerate(table):
        if len(set(places)) < CHUNKS:
            a = next(c for c in range(CHUNKS) if places.count(places[c]) > 1)
            b = next(c for c in range(a + 1, CHUNKS) if places[c] == places[a])
            unused = next(p for p in range(CHUNKS) if p not in places)
            raise NotYet(f"two chunks of row {row} land on the same place: {name}({row}, {a}) and {name}({row}, {b}) "
                         f"both return {places[a]}, so one overwrites the other and the row loses data (and place "
                         f"{unused} is never used). Within each row, {name} must send the {CHUNKS} chunks to "
                         f"{CHUNKS} different places: a permutation of 0..{CHUNKS - 1}")
    report.ok(f"within each of the {TILE_ROWS} rows, the {CHUNKS} chunks go to {CHUNKS} different places: no data lost")
    for row in range(TILE_ROWS):       # a cp.async of a row: 8 lanes, 16 bytes each, one shared-memory pass at best
        ways = passes([w for chunk in range(CHUNKS) for w in chunk_words(table, row, chunk)])
        if ways > 1:   # only a non-permutation could do this, and it was rejected above
            raise NotYet(f"the cp.async writes of row {row} (8 lanes, one chunk each) take {ways} passes")
    report.ok(f"the cp.async writes of a whole row (8 lanes, 16 bytes each) touch all {BANKS} banks once: 1 pass, every row")
    ways, row0, chunk0, j = worst_ldmatrix(table)
    if ways > 1: raise NotYet(conflict_sentence(table, name, ways, row0, chunk0, j))
    report.ok(f"every ldmatrix.x4 of a 16 x 16 piece (rows 16p..16p+15 of the {TILE_ROWS}, chunks c0 and c0 + 1 for "
              "c0 = 0, 2, 4, 6) takes 1 pass per 8 x 8 matrix (the bank model): the worst case found is 1 way, no bank "
              "conflict")

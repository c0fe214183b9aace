"""Where TMA puts a tile in shared memory, and where wgmma reads it: a model of the two, to check a matrix descriptor on a CPU.

TMA with the 128-byte swizzle writes a box of rows of 128 bytes: element (row, col) lands at byte
`row * 128 + col * size`, with its 16-byte chunk XOR-ed by `row % 8` (notebook 12's swizzle, done by the copy
engine). wgmma finds each element of its operands from a *matrix descriptor*: a start address and two strides,
LBO (leading-dimension byte offset) and SBO (stride-dimension byte offset), read against one of a few canonical
layouts (PTX ISA, "Shared memory matrix layout"). With the 128-byte swizzle, in bytes before the swizzle:

- **K-major** (the operand's K values contiguous, as A's rows): row `mn` of the operand, value `k` (k < 64 for
  bf16), is at `(mn // 8) * SBO + (mn % 8) * 128 + k * size`; LBO is not used;
- **MN-major** (its M or N values contiguous, as rows of a K x N matrix B): value `mn`, row `k` is at
  `(mn // 64) * LBO + (k // 8) * SBO + (k % 8) * 128 + (mn % 64) * size` (64 = 128 bytes of bf16).

The swizzle is then applied to the whole address (bits 4-6 XOR-ed with bits 7-9), which is why tiles start on
1024 bytes. A descriptor is right when, for every element a wgmma reads, the two places agree: `mismatches`
counts the ones that do not.
"""

SWIZZLE_BYTES = 128          # the swizzle's row: 8 chunks of 16 bytes


def swizzle_128(address):
    "The 128-byte swizzle of a shared-memory byte address: its 16-byte chunk (bits 4-6) XOR-ed by its row of 128 bytes mod 8 (bits 7-9)."
    return address ^ (((address >> 7) & 7) << 4)


def tma_offset(row, col, element_bytes=2):
    "Where TMA (128-byte swizzle) writes element (row, col) of a box whose rows are 128 bytes: a byte offset from the box's start."
    if not 0 <= col * element_bytes < SWIZZLE_BYTES:
        raise ValueError(f"column {col} is outside a 128-byte box row of {SWIZZLE_BYTES // element_bytes} values")
    return swizzle_128(row * SWIZZLE_BYTES + col * element_bytes)


def wgmma_offset(mn, k, major, leading_bytes, stride_bytes, start=0, element_bytes=2):
    """Where wgmma reads value (mn, k) of an operand (mn: its row of M or column of N) from a descriptor with start
    offset `start` and strides LBO = `leading_bytes`, SBO = `stride_bytes`, 128-byte swizzle; `major` is 'K' or 'MN'."""
    per_row = SWIZZLE_BYTES // element_bytes
    if major == 'K':
        if not 0 <= k < per_row: raise ValueError(f"a K-major operand holds K values 0 to {per_row - 1} per row, not {k}")
        plain = (mn // 8) * stride_bytes + (mn % 8) * SWIZZLE_BYTES + k * element_bytes
    elif major == 'MN':
        plain = (mn // per_row) * leading_bytes + (k // 8) * stride_bytes + (k % 8) * SWIZZLE_BYTES + (mn % per_row) * element_bytes
    else:
        raise ValueError(f"major must be 'K' or 'MN', got {major!r}")
    return swizzle_128(start + plain)


def b_stage_offset(k, n, bk=64, element_bytes=2):
    "Where the B stage of notebook 13's kernels holds B's row k, column n: boxes of 64 columns x bk rows, one after another, each written by TMA."
    per_row = SWIZZLE_BYTES // element_bytes
    box, col = divmod(n, per_row)
    return box * bk * SWIZZLE_BYTES + tma_offset(k, col, element_bytes)


def a_stage_offset(m, k, element_bytes=2):
    "Where the A stage holds A's row m, value k (of 64): one TMA box of 128-byte rows."
    return tma_offset(m, k, element_bytes)


def mismatches(operand, leading_bytes, stride_bytes, rows=128, bn=256, bk=64, k_step=16):
    """How many values the wgmmas of one stage would read from the wrong place with these LBO and SBO: operand 'A'
    (rows x bk, K-major, one wgmma of 64 rows and k_step values of K per start address) or 'B' (bk x bn, MN-major,
    every column, k_step rows of K per wgmma). 0 means the descriptor is right."""
    wrong = 0
    for kk in range(bk // k_step):
        if operand == 'A':
            for m in range(rows):
                base, row = (m // 64) * 64 * SWIZZLE_BYTES, m % 64
                for k in range(k_step):
                    read = wgmma_offset(row, kk * k_step + k, 'K', leading_bytes, stride_bytes, start=base)
                    wrong += read != a_stage_offset(m, kk * k_step + k)
        elif operand == 'B':
            start = kk * k_step * SWIZZLE_BYTES
            for n in range(bn):
                for k in range(k_step):
                    read = wgmma_offset(n, k, 'MN', leading_bytes, stride_bytes, start=start)
                    wrong += read != b_stage_offset(kk * k_step + k, n, bk)
        else:
            raise ValueError(f"operand must be 'A' or 'B', got {operand!r}")
    return wrong


def descriptor(address, leading_bytes, stride_bytes, swizzle=1):
    """The 64-bit wgmma matrix descriptor, as the kernels' `matrix_descriptor` builds it: bits 0-13 the shared-memory
    address / 16, 16-29 LBO / 16, 32-45 SBO / 16, 62-63 the swizzle (1: 128 bytes)."""
    for name, v in (('address', address), ('LBO', leading_bytes), ('SBO', stride_bytes)):
        if v % 16: raise ValueError(f"the descriptor holds {name} in units of 16 bytes; {v} is not a multiple of 16")
    return (address & 0x3FFFF) >> 4 | (leading_bytes >> 4) << 16 | (stride_bytes >> 4) << 32 | swizzle << 62


def descriptor_fields(desc):
    "The fields of a descriptor back, in bytes: {'address', 'LBO', 'SBO', 'swizzle'}."
    return {'address': (desc & 0x3FFF) << 4, 'LBO': ((desc >> 16) & 0x3FFF) << 4,
            'SBO': ((desc >> 32) & 0x3FFF) << 4, 'swizzle': desc >> 62}


def draw_k_major_tile(rows=64, stride_bytes=1024, element_bytes=2, shared_rows=16):
    """A K-major tile of `rows` rows of 128 bytes (64 bf16 values of K each), drawn twice. Left, what a wgmma
    descriptor addresses: *core matrices* of 8 rows x 16 bytes, core matrix (g, c) at g x SBO + c x 16 bytes before
    the swizzle, the first wgmma's 16 values of K (two core matrices across) outlined; LBO, the step between core
    matrices along K, is not used, since those lie side by side in one 128-byte row. Right, where TMA put each 16-byte
    chunk of the first `shared_rows` rows in shared memory (tma_offset; the pattern repeats every 8 rows): chunk c of
    row r at chunk c ^ (r % 8), coloured by c as on the left. Every rectangle has a gid: 'core g c offset' on the
    left, 'shared r p c' on the right (row r's chunk p holds chunk c)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    chunks, per_chunk = SWIZZLE_BYTES // 16, 16 // element_bytes
    colours = plt.get_cmap('Set3').colors
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5.4), gridspec_kw=dict(width_ratios=[1, 1]))
    for g in range(rows // 8):
        for c in range(chunks):
            offset = g * stride_bytes + c * 16
            left.add_patch(Rectangle((c, g), 1, 1, facecolor=colours[c % len(colours)], edgecolor='0.3', lw=0.6,
                                     gid=f'core {g} {c} {offset}'))
            left.text(c + 0.5, g + 0.5, str(offset), ha='center', va='center', fontsize=7)
    left.add_patch(Rectangle((0, 0), 2, rows // 8, fill=False, edgecolor='k', lw=2.2))
    left.set_xlim(0, chunks); left.set_ylim(rows // 8, 0); left.set_aspect('equal')
    left.set_xticks([c + 0.5 for c in range(chunks)],
                    [f"K {c * per_chunk}-{c * per_chunk + per_chunk - 1}" for c in range(chunks)], fontsize=7, rotation=45)
    left.set_yticks([g + 0.5 for g in range(rows // 8)], [f"rows {8 * g}-{8 * g + 7}" for g in range(rows // 8)], fontsize=7)
    left.set_title(f"what the descriptor addresses: core matrices of 8 rows x 16 bytes at\ntheir byte offsets before the "
                   f"swizzle, SBO = {stride_bytes} from 8 rows to the next\n(outlined: the first wgmma's 16 values of K; "
                   f"the next starts 32 bytes on)", fontsize=9)
    for r in range(shared_rows):
        for c in range(chunks):
            p = tma_offset(r, c * per_chunk, element_bytes) % SWIZZLE_BYTES // 16
            right.add_patch(Rectangle((p, r), 1, 1, facecolor=colours[c % len(colours)], edgecolor='0.5', lw=0.4,
                                      gid=f'shared {r} {p} {c}'))
            right.text(p + 0.5, r + 0.5, str(c), ha='center', va='center', fontsize=7)
    for g in range(1, -(-shared_rows // 8)): right.axhline(8 * g, color='k', lw=1.2)
    right.set_xlim(0, chunks); right.set_ylim(shared_rows, 0)
    right.set_xticks([p + 0.5 for p in range(chunks)], [f"{16 * p}" for p in range(chunks)], fontsize=7)
    right.set_xlabel("byte of the 128-byte row", fontsize=8)
    right.set_yticks([r + 0.5 for r in range(shared_rows)], [f"row {r}" for r in range(shared_rows)], fontsize=7)
    right.set_title(f"where TMA put them (128-byte swizzle), the first {shared_rows} rows:\nchunk c of row r at chunk "
                    f"c ^ (r mod 8); the number is c", fontsize=9)
    fig.tight_layout()
    return fig

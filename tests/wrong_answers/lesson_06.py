"Wrong answers for notebook 06's exercises (static shared memory, shared-memory banks)."
from . import Wrong, solution_with

TILE_DECLARED = "    __shared__ float tile[TILE][TILE + 1];   // +1: a column of the tile spreads over all 32 banks\n"
TILE_READ = "= tile[threadIdx.x][j];"
TILE_STORE = "tile[j][threadIdx.x] = m["


def through_pointer(pointer, read, store=None, declared=TILE_DECLARED):
    """06.2's reference with a float pointer into its tile (declared as `declared`) right after it, the tile's `read`
    (and `store`) going through that pointer."""
    changes = [(TILE_DECLARED, f"{declared}    {pointer};\n"), (TILE_READ, f"= {read};")]
    return solution_with('06.2', *changes, *([(TILE_STORE, f"{store} = m[")] if store else []))


def padding_ignored(access, step=32):
    "The sentence for an access through a pointer that steps `step` floats per lane in a tile padded to rows of 33."
    return (rf"the shared tile tile\[TILE\]\[TILE \+ 1\] has rows of 33 floats, but the {access} at line \d+ of the "
            rf"`#\| exercise 06\.2` cell gives the 32 lanes of a warp words {step} apart.*a 32-way bank conflict, 32 passes "
            r"instead of one")


# The padded tile of 06.2 accessed through a float pointer that ignores its padding: (slip, the pointer, the read, the
# store (None: tile[j][threadIdx.x] as in the reference), the access the sentence names).
POINTER_SLIPS = (
    ('the padded tile read through a flat pointer with rows of TILE', "float* flat = &tile[0][0]",
     "flat[threadIdx.x*TILE + j]", None, r"read of `flat\[threadIdx\.x\*TILE \+ j\]`"),
    ('the padded tile cast to a const float pointer, rows of 32', "const float* flat = (const float*)tile",
     "flat[threadIdx.x*32 + j]", None, r"read of `flat\[threadIdx\.x\*32 \+ j\]`"),
    ("the padded tile's first row as a pointer, rows of TILE", "float* row = tile[0]",
     "row[TILE*threadIdx.x + j]", None, r"read of `row\[TILE\*threadIdx\.x \+ j\]`"),
    ("a pointer to the lane's column, TILE floats per row", "float* column = &tile[0][0] + threadIdx.x*TILE",
     "column[j]", None, r"read of `column\[j\]`"),
    ('the tile stored down its columns through a flat pointer with rows of TILE', "float* flat = &tile[0][0]",
     "flat[j*TILE + threadIdx.x]", "flat[threadIdx.x*TILE + j]", r"store to `flat\[threadIdx\.x\*TILE \+ j\]`"),
)

NT_STRIDE = "NT_STRIDE = TK + 1 "


def overlapping(tile, rows, apart):
    "The sentence for rows of a tile in shared memory that overlap, `apart` floats apart."
    return (rf"rows {rows[0]} and {rows[1]} of the tile of {tile} overlap in shared memory: its warps store each row as 32 floats, "
            rf"but .*, {apart} floats further.*both store shared\[\d+\] in the same phase, and no barrier can keep both values")


WRONG = [
    # 06.1: rectangular tiles in static shared memory
    Wrong('06.1', 'a barrier inside the guard',
          change=("        __syncthreads();\n        for (int i = 0; i < TK; ++i)",
                  "        if (r < h && c < w) __syncthreads();\n        for (int i = 0; i < TK; ++i)"),
          expect=r"the __syncthreads\(\) at line \d+ of the `#\| exercise 06.1` cell \(matmul_rect_k\) is inside `if \(r < h && c < w\)`"),
    Wrong('06.1', 'the second barrier missing',
          change=("ns[i][tc];\n        __syncthreads();\n", "ns[i][tc];\n"),
          expect=r"two __syncthreads\(\) per phase.*has 1 barriers"),
    Wrong('06.1', 'dynamic shared memory',
          change=("    __shared__ float ms[TH][TK], ns[TK][TW];\n",
                  "    extern __shared__ float sh[];\n    float (*ms)[TK] = (float (*)[TK])sh, (*ns)[TW] = (float (*)[TW])(sh + TH*TK);\n"),
          expect=r"declares `extern __shared__` memory, where the exercise asks for static shared arrays sized by the constants"),
    Wrong('06.1', 'the write guard lets row h through',
          change=("if (r < h && c < w) out[r*w + c] = p;", "if (r <= h && c < w) out[r*w + c] = p;"),
          cpu='not checked here',
          expect=r"writes \d+ element\(s\) past the end of out"),
    Wrong('06.1', 'the load of m misses its k guard',
          change=("ms[tr][j] = r < h && idx+j < k ? m[", "ms[tr][j] = r < h ? m["),
          cpu='not checked here',
          expect=r"reads past the end \(or before the start\) of m"),
    Wrong('06.1', 'the loads of ns step by TW',
          change=("for (int i = tr; i < TK; i += TH)", "for (int i = tr; i < TK; i += TW)"),
          cpu='not checked here',
          expect=r"element \[\d+, \d+\] is .*, expected|two runs on the same inputs give different results"),

    # 06.2: a transpose through a padded shared tile
    Wrong('06.2', 'the tile not padded',
          change=("__shared__ float tile[TILE][TILE + 1];", "__shared__ float tile[TILE][TILE];"),
          expect=r"tile\[TILE\]\[TILE\] has rows of 32 floats: .*a 32-way bank conflict"),
    Wrong('06.2', 'the padding on the wrong dimension',
          change=("__shared__ float tile[TILE][TILE + 1];", "__shared__ float tile[TILE + 1][TILE];"),
          expect=r"tile\[TILE \+ 1\]\[TILE\] has rows of 32 floats: .*a 32-way bank conflict"),
    Wrong('06.2', 'no barrier between filling and reading the tile',
          change=("    __syncthreads();\n", ""),
          expect=r"a __syncthreads\(\) is missing between filling the tile and reading it"),
    Wrong('06.2', 'a barrier inside a branch',
          change=("    __syncthreads();\n", "    if (x < w) __syncthreads();\n"),
          expect=r"the __syncthreads\(\) at line \d+ of the `#\| exercise 06.2` cell \(transpose_k\) is inside `if \(x < w\)`"),
    Wrong('06.2', 'the write without its guard',
          change=("        if (oy0 + j < w && ox < h) out[", "        out["),
          cpu='not checked here',
          expect=r"writes \d+ element\(s\) past the end of out"),
    Wrong('06.2', 'the tile read without transposing',
          change=("= tile[threadIdx.x][j];", "= tile[j][threadIdx.x];"),
          cpu='not checked here',
          expect=r"transposing a 1024x704 m: element \[\d+, \d+\] is"),

    *(Wrong('06.2', slip, body=through_pointer(pointer, read, store), expect=padding_ignored(access))
      for slip, pointer, read, store, access in POINTER_SLIPS),

    # 06.3: shared-memory banks, with n given transposed
    Wrong('06.3', 'nt loaded down its columns (not coalesced)',
          change=("        for j in range(tr, TW, TH):             # row j of the tile: a warp reads 32 neighbours of one row of nt\n"
                  "            row = blockIdx.x*TW + j\n"
                  "            nts[j*NT_STRIDE + tc] = nt[row*k + idx + tc] if row < w and idx + tc < k else 0.\n",
                  "        for i in range(tr, TK, TH):\n"
                  "            nts[tc*NT_STRIDE + i] = nt[c*k + idx + i] if c < w and idx + i < k else 0.\n"),
          expect=r"threads \(x=0, y=0\) and \(x=1, y=0\) of block \(x=0, y=0\) read nt\[0\] and nt\[32\]: neighbouring threads should read neighbouring elements"),
    Wrong('06.3', 'the tile not padded',
          change=("NT_STRIDE = TK + 1 ", "NT_STRIDE = TK "),
          expect=r"warp 0 of block \(0, 0\): its 2nd shared read hits bank 0 in 32 different words \(a 32-way conflict.*32 words apart"),
    Wrong('06.3', 'padded when written, not when read',
          change=("nts[tc*NT_STRIDE + i]", "nts[tc*TK + i]"),
          expect=r"m @ nt.T with m 8x32 and nt 32x32: element \[\d+, \d+\] is"),
    Wrong('06.3', 'the second barrier missing',
          change=("        syncb.wait()\n    if r < h", "    if r < h"),
          expect=r"no barrier between reading shared memory .* and the next pass of the loop filling it again"),
    Wrong('06.3', 'a barrier inside an if',
          change=("        syncb.wait()\n        for i in range(TK)", "        if r < h: syncb.wait()\n        for i in range(TK)"),
          expect=r"matmul_nt_k \(the `#\| exercise 06.3` cell\): the barrier at line \d+ is inside the `if`"),
    Wrong('06.3', "the rows of nt's tile 31 floats apart (overlapping)",
          change=(NT_STRIDE, "NT_STRIDE = TK - 1 "), expect=overlapping('nt', (0, 1), 31)),
    Wrong('06.3', "the rows of nt's tile 16 floats apart (half a row)",
          change=(NT_STRIDE, "NT_STRIDE = 16 "), expect=overlapping('nt', (0, 1), 16)),
    Wrong('06.3', "the rows of nt's tile TW - 8 floats apart",
          change=(NT_STRIDE, "NT_STRIDE = TW - 8 "), expect=overlapping('nt', (0, 1), 24)),
    Wrong('06.3', "the rows of m's tile 31 floats apart",
          change=("        ms[tr*TK + tc] = m[", "        ms[tr*(TK - 1) + tc] = m["), expect=overlapping('m', (0, 1), 31)),
    Wrong('06.3', 'the load of nt without its row guard',
          change=("if row < w and idx + tc < k else 0.", "if idx + tc < k else 0."),
          expect=r"reads nt\[\d+\], outside the buffer"),
]

# Right answers near the rules' edges: each must not be rejected.
RIGHT = [
    Wrong('06.2', 'the padded tile read through a flat pointer with its padded row length',
          body=through_pointer("float* flat = &tile[0][0]", read="flat[threadIdx.x*(TILE + 1) + j]"), expect=''),
    Wrong('06.2', 'the padded tile stored and read through a flat pointer, 33 floats per row',
          body=through_pointer("float* flat = (float*)tile", read="flat[threadIdx.x*33 + j]", store="flat[j*33 + threadIdx.x]"),
          expect=''),
    Wrong('06.2', 'an unpadded tile, its columns swizzled by XOR (no bank conflict either)',
          body=through_pointer("float* flat = &tile[0][0]", read="flat[threadIdx.x*TILE + (j ^ threadIdx.x)]",
                               store="flat[j*TILE + (threadIdx.x ^ j)]", declared="    __shared__ float tile[TILE][TILE];\n"),
          expect=''),
]

"Wrong answers for notebook 02's exercises (tiles in shared memory, one call per block)."
from . import Wrong

NT_LOAD = "ns[tc*tw + tr] = nT[(c0 + tr)*k + idx + tc] if c0 + tr < w and idx + tc < k else 0."
NT_ROW = "nT[(c0 + tr)*k + idx + tc]"
M_ROW = "m[(r0 + tr)*k + idx + tc]"


def row_length(buffer, read_as, size):
    "The sentence for rows of `buffer` read `read_as` ('w = 3', '8') floats apart where they are `size` ('k = 7') apart."
    return (rf"reads element \(\d+, \d+\) of {buffer} at {buffer}\[\d+\], as if the rows of {buffer} were {read_as} floats "
            rf"long: .*its rows are {size} apart.*the row length \(the stride from one row to the next\) is wrong")


# Rows of an input read at a wrong row length (the stride from one row to the next), not a missing phase or a stray
# element: (exercise, buffer, its row as read right, as read wrongly, the length read, as the sentence names it, the right one).
ROW_LENGTH_SLIPS = (
    ('02.1', 'nT', NT_ROW, "nT[(c0 + tr)*w + idx + tc]", 'w (the row length of n)', 'w = 3', 'k = 7'),
    ('02.1', 'nT', NT_ROW, "nT[(c0 + tr)*tw + idx + tc]", 'tw (the row length of the tile)', 'tw = 4', 'k = 7'),
    ('02.1', 'nT', NT_ROW, "nT[(c0 + tr)*(k - 1) + idx + tc]", 'one less than k', '6', 'k = 7'),
    ('02.1', 'nT', NT_ROW, "nT[(c0 + tr)*(k + 1) + idx + tc]", 'one more than k (past the end of nT)', '8', 'k = 7'),
    ('02.1', 'm', M_ROW, "m[(r0 + tr)*w + idx + tc]", 'w', 'w = 3', 'k = 7'),
    ('02.1', 'm', M_ROW, "m[(r0 + tr)*h + idx + tc]", 'h', 'h = 5', 'k = 7'),
    ('02.2', 'n', "n[(idx + i)*w + c0 + j]", "n[(idx + i)*k + c0 + j]", 'k', 'k = 7', 'w = 3'),
    ('02.2', 'n', "n[(idx + i)*w + c0 + j]", "n[(idx + i)*tw + c0 + j]", 'tw (past the end of n)', 'tw = 8', 'w = 3'),
    ('02.2', 'm', "m[(r0 + i)*k + idx + j]", "m[(r0 + i)*tk + idx + j]", 'tk (the row length of ms)', 'th = tk = 4', 'k = 7'),
)

WRONG = [
    Wrong('02.1', "nT read as if it were n (n's layout)",
          change=(NT_LOAD, "ns[tr*tw + tc] = nT[(idx + tr)*w + c0 + tc] if idx + tr < k and c0 + tc < w else 0."),
          expect=r"row c of nT is column c of n"),
    Wrong('02.1', 'no bound check along k on the nT tile (reads past the end of a row of nT)',
          change=(NT_LOAD, "ns[tc*tw + tr] = nT[(c0 + tr)*k + idx + tc] if c0 + tr < w else 0."),
          expect=r"reads nT\[\d+\], element \(\d+, \d+\) of nT, which it does not need.*past the end of that 7-column row|"
                 r"reads nT\[\d+\], outside the buffer.*a bound check is missing or wrong"),
    Wrong('02.1', 'no bound check on the columns of out when loading nT',
          change=(NT_LOAD, "ns[tc*tw + tr] = nT[(c0 + tr)*k + idx + tc] if idx + tc < k else 0."),
          expect=r"reads nT\[\d+\], outside the buffer.*bound check is missing or wrong"),
    Wrong('02.1', 'no bound check along k on the m tile (reads outside m on the last tile)',
          change=("ms[tr*tw + tc] = m[(r0 + tr)*k + idx + tc] if r0 + tr < h and idx + tc < k else 0.",
                  "ms[tr*tw + tc] = m[(r0 + tr)*k + idx + tc] if r0 + tr < h else 0."),
          expect=r"reads m\[\d+\], element \(\d+, \d+\) of m, which it does not need.*past the end of that 7-column row|"
                 r"reads m\[\d+\], outside the buffer"),
    Wrong('02.1', 'the dot products read nT from global memory',
          change=("sum(ms[tr*tw + i] * ns[i*tw + tc] for i in range(tw))",
                  "sum(ms[tr*tw + i] * nT[(c0 + tc)*k + idx + i] for i in range(min(tw, k - idx)))"),
          expect=r"reads \d+ values from global memory; with each value of a tile read once and the dot products read from ms and ns"),
    Wrong('02.1', 'the last partial tile dropped',
          change=("for ph in range(cdiv(k, tw)):", "for ph in range(k // tw):"),
          expect=r"never reads .*the last phase, a partial tile of the last \d+ of k = \d+, is missing"),
    *(Wrong(exercise, f"the rows of {buffer} read {length} apart", change=(row, read), expect=row_length(buffer, named, size))
      for exercise, buffer, row, read, length, named, size in ROW_LENGTH_SLIPS),
    Wrong('02.2', 'th and tw swapped in the loop filling ms',
          change=("        for i in range(th):                       # ms: th x tk", "        for i in range(tw):                       # ms: th x tk"),
          expect=r"writes shared\[\d+\] \(the view shared\[0:\d+\]\), outside.*ms = shared\[:th\*tk\] holds th x tk|"
                 r"never reads m\[\d+\], element \(\d+, \d+\) of m, which output row \d+ needs: each phase fills ms with the block's \d+ rows"),
    Wrong('02.2', 'the last partial k-tile dropped',
          change=("for ph in range(cdiv(k, tk)):", "for ph in range(k // tk):"),
          expect=r"never reads .*the last phase, a partial tile of the last \d+ of k = \d+, is missing"),
    Wrong('02.2', 'reading outside m on the last tile (no bound check along k)',
          change=("if r0 + i < h and idx + j < k else 0.", "if r0 + i < h else 0."),
          expect=r"reads m\[\d+\], element \(\d+, \d+\) of m, which it does not need.*past the end of that \d+-column row|"
                 r"reads m\[\d+\], outside the buffer"),
    Wrong('02.2', 'no bound check on the columns of n',
          change=("if idx + i < k and c0 + j < w else 0.", "if idx + i < k else 0."),
          expect=r"reads n\[\d+\], element \(\d+, \d+\) of n, which it does not need.*past the end of that \d+-column row|"
                 r"reads n\[\d+\], outside the buffer"),
    Wrong('02.2', 'tw for tk as the row length of ms in the dot products',
          change=("out[r*w + c] += ms[tr*tk + i] * ns[i*tw + tc]", "out[r*w + c] += ms[tr*tw + i] * ns[i*tw + tc]"),
          expect=r"ms = shared\[:th\*tk\] holds th x tk = \d+ x \d+ values \(row i at i\*tk\)"),
]

# Right answers near the row-length rule: the same elements read in another order, or through another expression.
RIGHT = [
    Wrong('02.1', "nT's tile read down its columns (as the hint's first way: right, if slower on a GPU)",
          change=(NT_LOAD, "ns[tr*tw + tc] = nT[(c0 + tc)*k + idx + tr] if c0 + tc < w and idx + tr < k else 0."), expect=''),
    Wrong('02.1', "m's row start written as r0*k + tr*k",
          change=(M_ROW, "m[r0*k + tr*k + idx + tc]"), expect=''),
]

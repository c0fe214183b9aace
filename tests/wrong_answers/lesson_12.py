"Wrong answers for notebook 12's exercises (the fragments of mma.sync, and a swizzle free of bank conflicts)."
from . import Wrong

A_ROW = "    row = group + 8 * (i % 4 >= 2)              # elements 2, 3 and 6, 7: 8 rows further down\n"
A_COL = "    col = thread * 2 + i % 2 + 8 * (i >= 4)     # elements 4 to 7: the same pattern in A's right half, k = 8..15\n"
A_RETURN = A_COL + "    return row, col\n"


def swizzle_returning(expression):
    "The solution of 12.2 with `return <expression>`."
    return ('chunk ^ (row % 8)', expression)


WRONG = [
    # 12.1: which lane holds which element
    Wrong('12.1', "C's map reused for A (no right half)",
          change=(A_ROW + A_COL, "    row = group + 8 * (i >= 2)\n    col = thread * 2 + i % 2\n"),
          expect=r"a_fragment_element\(0, 2\) and a_fragment_element\(0, 4\) both return \(8, 0\): two registers cannot "
                 r"hold the same element of A"),
    Wrong('12.1', 'the column misses the +8 of elements 4 to 7',
          change=(A_COL, "    col = thread * 2 + i % 2\n"),
          expect=r"a_fragment_element\(0, 0\) and a_fragment_element\(0, 4\) both return \(0, 0\)"),
    Wrong('12.1', 'the halves of the rows and of k swapped',
          change=(A_ROW + A_COL, "    row = group + 8 * (i >= 4)\n    col = thread * 2 + i % 2 + 8 * (i % 4 >= 2)\n"),
          expect=r"lane 0, element 2: you say \(0, 8\); mma\.sync reads A\[8\]\[0\] there \(your map differs for elements "
                 r"2, 3, 4 and 5 of every lane\)\. .*warp_mma gets D = A\.B \+ C wrong in \d+ of 128 elements"),
    Wrong('12.1', 'A transposed: (col, row)',
          change=(A_RETURN, A_COL + "    return col, row\n"),
          expect=r"lane 0, element 1: you say \(1, 0\); mma\.sync reads A\[0\]\[1\] there.*warp_mma gets D = A\.B \+ C wrong"),
    Wrong('12.1', "the right half's two rows swapped (elements 4, 5 at row group + 8)",
          change=(A_ROW, "    row = group + 8 * (i % 4 >= 2) - 8 * (i >= 6) + 8 * (4 <= i < 6)\n"),
          expect=r"lane 0, element 4: you say \(8, 8\); mma\.sync reads A\[0\]\[8\] there \(your map differs for elements "
                 r"4, 5, 6 and 7 of every lane\)"),
    Wrong('12.1', 'groupID and threadID_in_group swapped',
          change=("    group, thread = lane >> 2, lane % 4\n    row = group + 8 * (i % 4",
                  "    group, thread = lane % 4, lane >> 2\n    row = group + 8 * (i % 4"),
          expect=r"a_fragment_element\(16, 4\) returned \(0, 16\), outside A's 16 x 16 tile"),
    Wrong('12.1', 'groupID with / (a float)',
          change=("    group, thread = lane >> 2, lane % 4\n    row = group + 8 * (i % 4",
                  "    group, thread = lane / 4, lane % 4\n    row = group + 8 * (i % 4"),
          expect=r"a_fragment_element\(0, 0\) returned \(0\.0, 0\), a float: row and col are whole numbers"),
    Wrong('12.1', 'the flat index row * 16 + col',
          change=(A_RETURN, A_COL + "    return row * 16 + col\n"),
          expect=r"a_fragment_element\(0, 0\) returned 0 \(int\): return 2 whole numbers, `return row, col`"),
    Wrong('12.1', 'no return',
          change=(A_RETURN, A_COL),
          expect=r"a_fragment_element\(0, 0\) returned None: end the function with `return row, col`"),

    Wrong('12.1', 'ignores its arguments: counts its calls (right in the order of the first round)',
          change=("def a_fragment_element(lane, i):\n",
                  "CALLS = [0]\n\ndef a_fragment_element(lane, i):\n    lane, i = divmod(CALLS[0] % 256, 8)\n    CALLS[0] += 1\n"),
          expect=r"a_fragment_element\(\d+, \d+\) returned \(\d+, \d+\) the first time and \(\d+, \d+\) when asked again in "
                 r"another order: the answer must depend only on the arguments"),
    Wrong('12.1', 'SystemExit (as exit() raises) for one lane',
          change=("    group, thread = lane >> 2, lane % 4\n    row = group + 8 * (i % 4",
                  "    if lane == 7: raise SystemExit\n    group, thread = lane >> 2, lane % 4\n    row = group + 8 * (i % 4"),
          expect=r"a_fragment_element\(7, 0\) called exit\(\).*: return a value instead"),
    Wrong('12.1', 'elements 6 and 7 swapped in lane 31 only',
          change=(A_RETURN, A_COL + "    if lane == 31 and i >= 6: col = 29 - col\n    return row, col\n"),
          expect=r"lane 31, element 6: you say \(15, 15\); mma\.sync reads A\[15\]\[14\] there"),

    # 12.2: swizzle away the bank conflicts
    Wrong('12.2', 'no swizzle',
          change=swizzle_returning('chunk'),
          expect=r"an ldmatrix\.x4 of the 16 x 16 piece at rows 0\.\.15, chunks 0 and 1 meets an 8-way bank conflict: its "
                 r"8 x 8 matrix 0 reads chunk 0 of rows 0\.\.7, which those rows store at places 0, 0, 0, 0, 0, 0, 0, 0\. "
                 r"A row is 128 bytes, all 32 banks"),
    Wrong('12.2', 'the place from the row alone (not a permutation)',
          change=swizzle_returning('row % 8'),
          expect=r"two chunks of row 0 land on the same place: swizzle\(0, 0\) and swizzle\(0, 1\) both return 0"),
    Wrong('12.2', 'XOR with row % 4',
          change=swizzle_returning('chunk ^ (row % 4)'),
          expect=r"meets a 2-way bank conflict: .*places 0, 1, 2, 3, 0, 1, 2, 3\. .*rows 0 and 4 both need bank 0"),
    Wrong('12.2', 'a rotation by two places per row',
          change=swizzle_returning('(chunk + 2 * row) % 8'),
          expect=r"meets a 2-way bank conflict: .*places 0, 2, 4, 6, 0, 2, 4, 6"),
    Wrong('12.2', 'XOR with the block of 8 rows (row // 8)',
          change=swizzle_returning('chunk ^ (row // 8 % 8)'),
          expect=r"meets an 8-way bank conflict"),
    Wrong('12.2', 'XOR with the whole row (no % 8)',
          change=swizzle_returning('chunk ^ row'),
          expect=r"swizzle\(8, 0\) returned 8: a row of the tile has 8 chunks of 16 bytes, so the place a chunk is "
                 r"stored at must be 0\.\.7"),
    Wrong('12.2', 'the element offset instead of the chunk',
          change=swizzle_returning('(chunk ^ (row % 8)) * 8'),
          expect=r"swizzle\(0, 1\) returned 8: a row of the tile has 8 chunks"),
    Wrong('12.2', 'a float place',
          change=swizzle_returning('(chunk ^ (row % 8)) / 1'),
          expect=r"swizzle\(0, 0\) returned 0\.0, a float: place is a whole number"),
    Wrong('12.2', 'ignores its arguments: counts its calls',
          change=("def swizzle(row, chunk):\n",
                  "import itertools\nCALLS = itertools.count()\n\ndef swizzle(row, chunk):\n    row, chunk = divmod(next(CALLS) % 1024, 8)\n"),
          expect=r"swizzle\(\d+, \d+\) returned \d+ the first time and \d+ when asked again in another order"),
    Wrong('12.2', 'XOR with row % 7',
          change=swizzle_returning('chunk ^ (row % 7)'),
          expect=r"bank conflict"),
    Wrong('12.2', 'a swizzle for 64-byte rows ((row // 2) % 8)',
          change=swizzle_returning('chunk ^ ((row // 2) % 8)'),
          expect=r"meets a 2-way bank conflict"),
]

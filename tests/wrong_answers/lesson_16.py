"""Wrong answers for notebook 16's exercises (whose rows a GPU holds at each hop of the column-parallel ring, which rows
it multiplies at each hop of the row-parallel ring), and right answers written unusually."""
from . import Wrong

OWNER = "    return (rank - hop) % size "
BLOCK = "    return (rank - hop - 1) % size "


def returning(line, expression):
    "The change that makes the solution's return `line` (OWNER or BLOCK) return `expression` instead."
    return (line, f"    return {expression} ")


WRONG = [
    Wrong('16.1', "rows travel the other way (rank + hop)", change=returning(OWNER, '(rank + hop) % size'),
          expect=r"ring_owner\(rank=0, hop=1, size=3\) returned 1, the GPU 1 place\(s\) after it: the rows travel the other "
                 r"way.*holds the rows of GPU 2 \(GPU 2 -> GPU 0\)"),
    Wrong('16.1', "one hop ahead", change=returning(OWNER, '(rank - hop - 1) % size'),
          expect=r"ring_owner\(rank=0, hop=0, size=2\) returned 1, but GPU 0 holds the rows of GPU 0 then \(its own"),
    Wrong('16.1', "no wrap-around", change=returning(OWNER, 'rank - hop'),
          expect=r"returned -1: GPUs are numbered 0 to 1 in a ring of 2"),
    Wrong('16.1', "its own rows at every hop", change=returning(OWNER, 'rank'),
          expect=r"ring_owner\(rank=0, hop=1, size=2\) returned 0, but GPU 0 holds the rows of GPU 1 then \(they "
                 r"started there and came one GPU a hop, GPU 1 -> GPU 0\)"),
    Wrong('16.1', "right on small rings only", change=returning(OWNER, '(rank - hop) % size if size < 5 else (rank + hop) % size'),
          expect=r"size=5\) returned .*the rows travel the other way"),
    Wrong('16.1', "a float", change=returning(OWNER, '(rank - hop) % size / 1'),
          expect=r"a float: the owner is a whole number"),
    Wrong('16.1', "a counter instead of the arguments",
          body="calls = []\ndef ring_owner(rank, hop, size):\n    calls.append(1)\n    return (rank - hop) % size if len(calls) < 200 else 0\n",
          expect=r"returned .* the first time and .* when asked again in another order"),
    Wrong('16.2', "the column ring's order", change=returning(BLOCK, '(rank - hop) % size'),
          expect=r"in a ring of 2 GPUs.*after the last hop GPU 0 holds the summed rows 1, not its own rows 0"),
    Wrong('16.2', "the other direction", change=returning(BLOCK, '(rank + hop + 1) % size'),
          expect=r"in a ring of 3 GPUs.*at hop 1 GPU 0 multiplies rows 2 and adds to them the sums GPU 2 sent it at hop "
                 r"0, which are of rows 0: partial sums of different rows added together"),
    Wrong('16.2', "its own rows at every hop", change=returning(BLOCK, 'rank'),
          expect=r"at hop 1 GPU 0 multiplies rows 0 and adds to them the sums GPU 1 sent it at hop 0, which are of rows "
                 r"1"),
    Wrong('16.2', "outside the ring", change=returning(BLOCK, 'rank - hop - 1'),
          expect=r"returned -1: GPUs are numbered 0 to 1 in a ring of 2"),
]

RIGHT = [
    Wrong('16.1', "walks the ring hop by hop",
          body="def ring_owner(rank, hop, size):\n    owner = rank\n    for _ in range(hop):\n        owner = (owner - 1 + size) % size\n    return owner\n",
          expect=''),
    Wrong('16.2', "from the end backwards",
          body="def row_block(rank, hop, size):\n    return (rank + (size - 1 - hop)) % size\n", expect=''),
]

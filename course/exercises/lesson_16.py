"""The exercises of notebook 16: whose rows a GPU holds at each hop of the column-parallel ring, and which rows a GPU
multiplies at each hop of the row-parallel ring. Both are checked on a CPU by playing the ring out in Python (every
GPU passes what it holds to the next, rank + 1, and receives from the one before, rank - 1), as
course.tensor_parallel's ring layers do."""
from .lesson_12 import asked_twice, whole_numbers
from .parts import NotYet, need_function, running
from .registry import exercise

RING_SIZES = tuple(range(2, 9))          # GPUs in the ring: 2 to 8


def ring_questions():
    "The (rank, hop, size) asked: every GPU and hop of rings of 2 to 8 GPUs."
    return [(rank, hop, size) for size in RING_SIZES for rank in range(size) for hop in range(size)]


def held_rows(size):
    """{(rank, hop): owner} of the column-parallel ring played out: at hop 0 each GPU holds its own rows; at each
    next hop it holds what the GPU before it (rank - 1) held, which that GPU has just sent on."""
    held = {(rank, 0): rank for rank in range(size)}
    for hop in range(1, size):
        for rank in range(size): held[rank, hop] = held[(rank - 1) % size, hop - 1]
    return held


def learner_answers(ns, report, name, what, returns):
    """{(rank, hop, size): int} from the learner's function `name` in `ns`: each answer an int in 0 .. size - 1 (`what`
    names it in a sentence), the same when asked again; reported as `returns` (what such an answer is)."""
    fn = need_function(ns, name, '(rank, hop, size)')

    def ask(key):
        call = f"{name}(rank={key[0]}, hop={key[1]}, size={key[2]})"
        with running(call): value = fn(*key)
        value = whole_numbers(value, call, (what,))
        if not 0 <= value < key[2]:
            raise NotYet(f"{call} returned {value}: GPUs are numbered 0 to {key[2] - 1} in a ring of {key[2]}")
        return value
    answers = asked_twice(ring_questions(), ask, name)
    report.ok(f"{name} returns {returns}, 0 to size - 1, for every GPU and hop of rings of {RING_SIZES[0]} to "
              f"{RING_SIZES[-1]} GPUs, the same when asked again in another order")
    return answers


def _trail(owner, rank, hop, size):
    "How the rows of `owner` reached GPU `rank` by `hop`: the GPUs they passed through."
    path = [(owner + step) % size for step in range(hop + 1)]
    return ' -> '.join(f"GPU {g}" for g in path)


@exercise('16.1', "whose rows are here",
          hints=("A GPU receives only from the GPU before it in the ring (rank - 1), and that GPU passes on what it held a "
                 "hop earlier. So what GPU `rank` holds at hop h is what GPU rank - 1 held at hop h - 1.",
                 "Follow that back h hops: the rows started on GPU rank - h. With the ring's wrap-around: "
                 "(rank - hop) % size."))
def whose_rows(ns, report):
    answers = learner_answers(ns, report, 'ring_owner', 'the owner', 'a GPU of the ring')
    for size in RING_SIZES:
        truth = held_rows(size)
        for hop in range(size):
            for rank in range(size):
                got, owner = answers[rank, hop, size], truth[rank, hop]
                if got == owner: continue
                where = f"ring_owner(rank={rank}, hop={hop}, size={size}) returned {got}"
                if got == (rank + hop) % size:
                    raise NotYet(f"{where}, the GPU {hop} place(s) after it: the rows travel the other way. In the ring "
                                 f"a GPU sends to rank + 1 and receives from rank - 1, so at hop {hop} GPU {rank} holds "
                                 f"the rows of GPU {owner} ({_trail(owner, rank, hop, size)})")
                came = (f"its own, which it starts with" if hop == 0 else
                        f"they started there and came one GPU a hop, {_trail(owner, rank, hop, size)}")
                raise NotYet(f"{where}, but GPU {rank} holds the rows of GPU {owner} then ({came}). With {got}, the "
                             f"layer would multiply rows it does not have and write them where GPU {got}'s rows belong")
    report.ok("for each, the GPU whose rows are there as the ring plays out, so every GPU multiplies every GPU's rows "
              "exactly once and its output is whole")


def row_ring_play(block, size):
    """Play the row-parallel ring out with `block(rank, hop)`, the rows each GPU multiplies at each hop: each GPU
    adds the partial sums it received (the GPU before it sent them at the hop before) to its own of `block(rank,
    hop)`. Returns the first problem as a sentence, or None where every GPU ends with all partials of its own rows."""
    carried = {}                  # rank -> (block, set of GPUs whose partials are in the sum it holds after a hop)
    for hop in range(size):
        now = {}
        for rank in range(size):
            mine = block(rank, hop)
            parts = {rank}
            if hop:
                their_block, their_parts = carried[(rank - 1) % size]
                if their_block != mine:
                    return (f"at hop {hop} GPU {rank} multiplies rows {mine} and adds to them the sums GPU "
                            f"{(rank - 1) % size} sent it at hop {hop - 1}, which are of rows {their_block}: partial "
                            "sums of different rows added together")
                parts |= their_parts
            now[rank] = (mine, parts)
        carried = now
    for rank in range(size):
        rows, parts = carried[rank]
        if rows != rank:
            return (f"after the last hop GPU {rank} holds the summed rows {rows}, not its own rows {rank}: the layer must "
                    f"leave GPU r with rows r")
        if len(parts) != size:
            return f"after the last hop GPU {rank}'s rows hold the partials of {len(parts)} GPUs, not all {size}"
    return None


@exercise('16.2', "which rows to multiply (row-parallel ring)",
          hints=("Work backwards from the end: at the last hop (hop size - 1) GPU r must multiply its own rows r, and "
                 "add the sums GPU r - 1 sent, so GPU r - 1 worked on rows r at the hop before. One hop earlier, "
                 "GPU r - 2 did, and so on.",
                 "GPU r at hop h works on the rows it will pass on, rows r + (size - 1 - h) mod size, which is "
                 "(rank - hop - 1) % size."))
def which_rows(ns, report):
    answers = learner_answers(ns, report, 'row_block', 'the block of rows', 'a block of rows')
    for size in RING_SIZES:
        problem = row_ring_play(lambda rank, hop: answers[rank, hop, size], size)
        if problem:
            raise NotYet(f"in a ring of {size} GPUs, played out with your row_block: {problem}")
    report.ok("played out on every ring, each GPU adds the sums it receives to its own of the same rows, and ends with "
              "all partials of its own rows: the reduce-scatter is whole")

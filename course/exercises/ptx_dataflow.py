"""What a kernel's PTX says about where its values come from, read without a GPU: the checks' model of a warp.

nvcc's PTX (`course.disassembly.cuda_ptx`) writes every value into a register before use, so following the registers
from instruction to instruction tells, for each load and store:

- where its address and its value come from (`value_origins`): which kernel parameters (A, B, m, v, k ...), which
  shared arrays, whether the thread's index (%tid.x) takes part;
- how its address moves from one lane of a warp to the next (`lane_steps`): the warp's lanes are threads 32w .. 32w+31
  of a block (x first), so %tid.x is a value the same for the whole warp plus the lane; an address that is "the same
  for the warp + s * lane" moves s bytes from lane to lane. s = 4 for 32 neighbouring floats: one warp access fills 4
  sectors of 32 bytes; s = 32 puts every lane in a sector of its own (see course/memory_access.py for the sectors);
- which comparisons decide whether a load runs at all (`guards_of`): the predicate of the load itself, the
  conditional branches that jump over it, and the tests of the loops around it.

Registers written in several places (a loop's counter, the two sides of an `if`) get what all their writes have in
common, so the reading holds on every pass of a loop. Scalar parameters can be given values (a problem's sizes): an
index such as row * k then moves by a known step. Where the reading cannot tell (an index read from memory, a
shuffle), it says so (None) and the checks stay silent."""
import re
from collections import defaultdict, namedtuple
from dataclasses import dataclass

Instruction = namedtuple('Instruction', 'line guard op written operands')   # guard: the predicate register or None

INSTRUCTION = re.compile(r'^[ \t]*(@!?%\w+\s+)?([a-z][\w.]*)[ \t]*([^;\n]*);', re.M)
REGISTER = re.compile(r'%\w+(?:\.[xyz])?')
PARAMETER = re.compile(r'\w+_param_(\d+)\b')
SHARED_ARRAY = re.compile(r'\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+(\w+)\[')
NO_DESTINATION = ('st', 'bar', 'bra', 'ret', 'exit', 'red', 'membar', 'fence', 'prefetch', 'call', 'barrier', 'trap')
LANE_INDEX = '%tid.x'


def registers(text): return REGISTER.findall(text)


def operands_of(text):
    "The operands of an instruction, split at the commas outside {...} and [...]."
    parts, depth, start = [], 0, 0
    for j, ch in enumerate(text):
        depth += (ch in '{[') - (ch in '}]')
        if ch == ',' and depth == 0:
            parts.append(text[start:j].strip()); start = j + 1
    return [p for p in parts + [text[start:].strip()] if p]


def instructions(ptx):
    "The instructions of a PTX listing, each with its line number (1-based), its guard, the registers it writes and its operands."
    out = []
    for m in INSTRUCTION.finditer(ptx):
        guard, op, text = m.group(1), m.group(2), m.group(3)
        if op.startswith('.'): continue
        operands = operands_of(text)
        writes = operands and not operands[0].startswith('[') and op.split('.')[0] not in NO_DESTINATION
        out.append(Instruction(ptx.count('\n', 0, m.start()) + 1, guard.strip() if guard else None, op,
                               registers(operands[0]) if writes else [], operands[1:] if writes else operands))
    return out


def shared_arrays(ptx):
    "{PTX symbol: the name the source gave it} of the kernel's shared arrays (`_ZZ...E3AsT` -> 'AsT'; an extern array keeps its own)."
    def name(symbol):
        m = re.search(r'E(\d+)([A-Za-z_]\w*)$', symbol)
        return m.group(2)[:int(m.group(1))] if m and symbol.startswith('_ZZ') else symbol
    return {symbol: name(symbol) for symbol in SHARED_ARRAY.findall(ptx)}


def labels_in(text, parameters, arrays):
    "The origins an operand names itself: kernel parameters (by the names in `parameters`), shared arrays, %tid.x."
    found = {parameters[int(p)] for p in PARAMETER.findall(text) if int(p) < len(parameters)}
    found |= {arrays[w] for w in re.findall(r'\w+', text) if w in arrays}
    return found | ({LANE_INDEX} if LANE_INDEX in text else set())


def value_origins(ptx, parameters):
    """{register: the origins of its value}: the kernel parameters (named as `parameters` lists them, in order), shared
    arrays (by their source names) and %tid.x that its value or its address is computed from, following every
    instruction that writes a register until nothing changes (loops feed registers back)."""
    arrays = shared_arrays(ptx)
    steps = [(ins.written, [r for o in ins.operands for r in registers(o)],
              set().union(*(labels_in(o, parameters, arrays) for o in ins.operands)))
             for ins in instructions(ptx) if ins.written]
    origins = defaultdict(set)
    changed = True
    while changed:
        changed = False
        for written, read, named in steps:
            found = set(named).union(*(origins[r] for r in read))
            for r in written:
                if not found <= origins[r]:
                    origins[r] |= found
                    changed = True
    return origins


# --------------------------------------------------------------------------------------------------
# How a value moves from lane to lane
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lanes:
    """A register's value across the lanes of a warp: the same for the whole warp, plus `step` * lane (step None: not
    of that form, or not known); `value` the whole value where it is one known number; `aligned` where the part that is
    the same for the warp is a multiple of 32 (as in %tid.x = 32 * warp + lane)."""
    step: object = None
    value: object = None
    aligned: bool = False

    def join(self, other):
        "What two writes of a register have in common."
        return Lanes(self.step if self.step == other.step else None, self.value if self.value == other.value else None,
                     self.aligned and other.aligned)


UNKNOWN, UNIFORM = Lanes(), Lanes(0)
SPECIAL = {'%tid.x': Lanes(1, None, True), '%laneid': Lanes(1, None, True), '%ctaid.x': UNIFORM, '%ctaid.y': UNIFORM,
           '%ctaid.z': UNIFORM, '%ntid.x': UNIFORM, '%ntid.y': UNIFORM, '%ntid.z': UNIFORM, '%nctaid.x': UNIFORM,
           '%nctaid.y': UNIFORM, '%nctaid.z': UNIFORM, '%warpid': UNIFORM}


def number(v): return Lanes(0, v, v % 32 == 0)


def plus(a, b, sign=1):
    if a.step is None or b.step is None: return UNKNOWN
    value = a.value + sign * b.value if a.value is not None and b.value is not None else None
    return Lanes(a.step + sign * b.step, value, a.aligned and b.aligned)


def times(a, b):
    if a.value is not None and b.step is not None:
        return Lanes(b.step * a.value, b.value * a.value if b.value is not None else None, b.aligned or a.value % 32 == 0)
    if b.value is not None and a.step is not None: return times(b, a)
    return UNIFORM if a.step == 0 and b.step == 0 else UNKNOWN


def lane_transfer(base, a, b, c):
    """The Lanes of an instruction's result from those of its first three source operands (None where absent): the
    arithmetic of indices, exact for sums and products by constants; lane masks and warp numbers of %tid.x."""
    sources = [x for x in (a, b, c) if x is not None]
    if base in ('mov', 'cvt', 'cvta') and a is not None: return a
    if base == 'neg' and a is not None and a.step is not None:
        return Lanes(-a.step, -a.value if a.value is not None else None, a.aligned)
    if base in ('add', 'sub') and b is not None: return plus(a, b, 1 if base == 'add' else -1)
    if base == 'mul' and b is not None: return times(a, b)
    if base == 'mad' and c is not None: return plus(times(a, b), c)
    if base == 'shl' and b is not None and b.value is not None: return times(a, number(2 ** b.value))
    power = b.value if b is not None and b.value is not None and b.value > 0 else None
    if base in ('shr', 'div', 'and', 'rem') and power is not None:
        size = {'shr': 2 ** power, 'div': power, 'and': power + 1, 'rem': power}[base]
        if a.step == 1 and a.aligned and size >= 32 and size & (size - 1) == 0:      # whole warps of %tid.x
            return UNIFORM if base in ('shr', 'div') else Lanes(1, None, True)
    if base in ('or', 'xor') and b is not None and b.value is not None and a.step:
        low_bit = a.step & -a.step
        if 0 <= b.value < low_bit: return Lanes(a.step)               # a small constant or-ed into a multiple of the step
    if base == 'selp' and b is not None: return a.join(b)
    if base in ('shfl', 'atom', 'vote', 'activemask'): return UNKNOWN
    return UNIFORM if sources and all(x.step == 0 for x in sources) else UNKNOWN


def operand_lanes(text, state, scalars):
    "The Lanes of one source operand: a register's state, a number, a special register, a symbol or a parameter."
    text = text.strip()
    if re.fullmatch(r'-?\d+', text): return number(int(text))
    if re.fullmatch(r'-?0[xX][0-9a-fA-F]+', text): return number(int(text, 16))
    if text in SPECIAL: return SPECIAL[text]
    if text.startswith('%'): return state.get(text)
    if text.startswith('{'):                             # a vector of registers (mov.b64 %rd1, {%r1, %r2}): no index of ours
        parts = [state.get(r) for r in registers(text)]
        return None if None in parts else UNIFORM if all(p.step == 0 for p in parts) else UNKNOWN
    if text.startswith('['):                             # an address: a load's value is the same for the warp where it is
        inside = registers(text)
        base = state.get(inside[0]) if inside else UNIFORM
        if base is None: return None
        if base.step != 0: return UNKNOWN
        parameter = PARAMETER.search(text)
        return number(scalars[int(parameter.group(1))]) if parameter and int(parameter.group(1)) in scalars else UNIFORM
    return UNIFORM                                       # a symbol (a shared array's address), a float constant


def lane_steps(ptx, scalars=None):
    """{register: Lanes} for every register the listing writes, `scalars` = {parameter index: value} giving some
    scalar parameters their values (a problem's sizes), followed until nothing changes."""
    scalars = scalars or {}
    state = {}
    listing = [ins for ins in instructions(ptx) if ins.written]
    changed = True
    while changed:
        changed = False
        for ins in listing:
            base = ins.op.split('.')[0] + ('.hi' if '.hi' in ins.op else '')     # mul.hi, mad.hi: not a product's low bits
            values = [operand_lanes(o, state, scalars) for o in ins.operands[:3]]
            if base == 'ld':
                got = values[0] if values and values[0] is not None else None
            else:
                if any(v is None for v in values): continue          # an operand not written yet (a loop's back edge)
                got = lane_transfer(base, *(values + [None] * 3)[:3])
            if got is None: continue
            for r in ins.written:
                new = state[r].join(got) if r in state else got
                if new != state.get(r):
                    state[r] = new
                    changed = True
    return state


# --------------------------------------------------------------------------------------------------
# Global memory accesses, and what guards a load
# --------------------------------------------------------------------------------------------------

GlobalAccess = namedtuple('GlobalAccess', 'line text kind buffer step width address')


def access_width(op):
    "Bytes one lane moves in a load or store such as ld.global.v4.f32 (16) or ld.global.nc.f32 (4)."
    vector = re.search(r'\.v(\d)', op)
    size = re.search(r'\.[bfsu](8|16|32|64)\b', op)
    return (int(vector.group(1)) if vector else 1) * (int(size.group(1)) // 8 if size else 4)


def global_accesses(ptx, parameters, scalars=None):
    """Every load from and store to global memory, as GlobalAccess: its line, its text, 'read' or 'write', the
    pointer parameter its address comes from (or None), how many bytes the address moves from lane to lane (None if unknown),
    the bytes one lane moves, and its address register."""
    origins, steps = value_origins(ptx, parameters), lane_steps(ptx, scalars)
    pointers = {parameters[int(i)] for i in re.findall(r'\.param\s+\.[bu]64\s+\w+_param_(\d+)', ptx) if int(i) < len(parameters)}
    lines = ptx.splitlines()
    out = []
    for ins in instructions(ptx):
        if not re.match(r'(ld|st)\.global\b', ins.op): continue
        address = next((o for o in ins.operands if o.startswith('[')), '')
        base = registers(address)
        buffers = (origins[base[0]] & pointers) if base else set()
        lanes = steps.get(base[0]) if base else None
        out.append(GlobalAccess(ins.line, lines[ins.line - 1].strip(), 'read' if ins.op.startswith('ld') else 'write',
                                buffers.pop() if len(buffers) == 1 else None, lanes.step if lanes else None,
                                access_width(ins.op), base[0] if base else None))
    return out


Guard = namedtuple('Guard', 'origins inside')      # inside: it stands in the innermost loop around the instruction, before it


def guards_of(ptx, line, parameters):
    """What decides whether the instruction at `line` runs, as Guards: its own predicate; the predicates of conditional
    branches before it that jump to a label after it (an `if` around it, a loop's test on entry); and those of the
    branches after it that jump back to a label before it (the test of a loop around it). `inside` says whether the
    branch stands between the innermost such loop's label and the instruction (a test made on every pass)."""
    origins, listing = value_origins(ptx, parameters), instructions(ptx)
    label_lines = {m.group(1): ptx.count('\n', 0, m.start()) + 1 for m in re.finditer(r'^[ \t]*(\$\w+):', ptx, re.M)}
    branches = [(ins, label_lines.get(ins.operands[0], 0)) for ins in listing
                if ins.guard and ins.op.startswith('bra') and ins.operands]
    head = max((target for ins, target in branches if target < line < ins.line), default=0)
    found = [Guard(origins[ins.guard.lstrip('@!')], True) for ins in listing if ins.line == line and ins.guard]
    for ins, target in branches:
        if ins.line < line < target or target < line < ins.line:
            found.append(Guard(origins[ins.guard.lstrip('@!')], head < ins.line < line))
    return found

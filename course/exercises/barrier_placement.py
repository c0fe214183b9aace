"""Where the barriers of a kernel stand, read from its source: the mistakes a run may not show.

- A barrier inside an `if` (or after an early `return`) is reached by some threads only: on a GPU the
  block deadlocks or its threads pass different barriers, whatever the values were in a test.
- In the loop over tiles, a barrier must stand between filling a shared array and reading it (else a
  thread reads a value not written yet), and between reading it and the next pass filling it again
  (else a fast thread overwrites what a slow one still reads). Two barriers side by side do neither job.

Works on Python kernels (the simulators' `syncb.wait()`, Numba's `cuda.syncthreads()`) through their
syntax tree, and on CUDA C (`__syncthreads()`) through its braces. Each finding is one sentence, with
the line in the learner's cell."""
import ast, re

PY_BARRIERS = ('wait', 'syncthreads')


def is_barrier(node):
    return (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and
            (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in PY_BARRIERS)


def contains_barrier(node): return any(is_barrier(n) for n in ast.walk(node))


def assigned_names(target):
    "The names a target assigns as a whole (x, or a, b): not those inside an index, as i in s[i] = ..."
    if isinstance(target, ast.Name): return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)): return [n for t in target.elts for n in assigned_names(t)]
    if isinstance(target, ast.Starred): return assigned_names(target.value)
    return []


# Values each thread has its own of: threadIdx (cuda.threadIdx in Numba) and cuda.laneid, and what cuda.grid(n) returns
# (blockIdx * blockDim + threadIdx).
THREAD_INDEX_NAMES = ('threadIdx', 'laneid')
THREAD_INDEX_CALLS = ('grid',)


def own_name(node):
    "The name a node ends in: x for x, attr for a.b.attr; None for any other node."
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def names_thread_index(node):
    "Whether the node is threadIdx, cuda.threadIdx or cuda.laneid, or a call of cuda.grid(n): a value each thread has its own of."
    if isinstance(node, ast.Call): return own_name(node.func) in THREAD_INDEX_CALLS
    return own_name(node) in THREAD_INDEX_NAMES


def depends_on_thread(expr, varying):
    "Whether the expression's value may differ between threads: it holds a thread index or one of the names `varying`."
    return any(isinstance(n, ast.Name) and n.id in varying or names_thread_index(n) for n in ast.walk(expr))


def thread_varying_names(fn):
    """Names whose value may differ between the threads of a block: threadIdx (cuda.grid(n) and cuda.laneid in
    Numba) and every name computed from it, directly or through others (loop variables of loops whose bounds
    vary, values read at varying indices). A condition on these splits the block; one on blockIdx or the
    arguments does not."""
    varying = {'threadIdx', 'tid'} & {a.arg for a in fn.args.args} | {'threadIdx'}
    mentions = lambda expr: depends_on_thread(expr, varying)
    pairs = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign): pairs += [(t, node.value) for t in node.targets]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None: pairs.append((node.target, node.value))
        elif isinstance(node, ast.For): pairs.append((node.target, node.iter))
    changed = True
    while changed:
        changed = False
        for target, value in pairs:
            if mentions(value):
                for n in assigned_names(target):
                    if n not in varying:
                        varying.add(n); changed = True
    return varying


def array_names(fn, space='shared'):
    """Names of the kernel's cuda.<space>.array(...)s (space 'shared' or 'local'), of other names for them and of
    their slices, and for 'shared', of the simulator kernels' `shared` argument; not of values read from them."""
    def made(value, names):
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == 'array':
            return isinstance(value.func.value, ast.Attribute) and value.func.value.attr == space
        if isinstance(value, ast.Name): return value.id in names                      # another name for the array
        return (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id in names
                and isinstance(value.slice, ast.Slice))
    names = {a.arg for a in fn.args.args if a.arg == 'shared'} if space == 'shared' else set()
    for node in ast.walk(fn):
        if not isinstance(node, ast.Assign): continue
        for target in node.targets:
            pairs = (zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                     and len(target.elts) == len(node.value.elts) else [(target, node.value)])
            names |= {t.id for t, v in pairs if isinstance(t, ast.Name) and made(v, names)}
    return names


def accesses(node, shared):
    "(writes, reads): whether the statement stores into / loads from a shared array."
    w = r = False
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in shared:
            if isinstance(n.ctx, ast.Store): w = True
            else: r = True
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript) and \
                isinstance(n.target.value, ast.Name) and n.target.value.id in shared:
            r = True
    return w, r


def python_barrier_problems(tree, first_line=1, place=lambda n: f"line {n}"):
    """Sentences for the barrier mistakes in a Python kernel's syntax tree (its function's source parsed
    alone; first_line is that function's first line in the learner's cell)."""
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    if fn is None: return []
    line = lambda n: place(n.lineno + first_line - 1)
    varying = thread_varying_names(fn)
    differs = lambda expr: depends_on_thread(expr, varying)
    problems = []
    for node in ast.walk(fn):
        if isinstance(node, (ast.If, ast.IfExp)) and differs(node.test):
            inner = [n for n in ast.walk(node) if is_barrier(n)]
            if inner:
                problems.append(f"the barrier at {line(inner[0])} is inside the `if` of {line(node)}: threads "
                                "for which the condition is false never reach it, so the block deadlocks or its threads "
                                "pass different barriers")
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.While)) and differs(node.iter if isinstance(node, ast.For) else node.test):
            inner = [n for n in ast.walk(node) if is_barrier(n)]
            if inner:
                problems.append(f"the barrier at {line(inner[0])} is inside the loop of {line(node)}, whose number of "
                                "passes differs between threads: a thread with fewer passes skips barriers the others "
                                "wait at")
    returns = [n for node in ast.walk(fn) if isinstance(node, ast.If) and differs(node.test)
               for n in ast.walk(node) if isinstance(n, ast.Return)]
    barriers = [n for n in ast.walk(fn) if is_barrier(n)]
    for r in returns:
        later = [b for b in barriers if b.lineno > r.lineno]
        if later:
            problems.append(f"the `return` at {line(r)} comes before the barrier at {line(later[0])}: the "
                            "threads that return early never reach it")
            break
    shared = array_names(fn, 'shared')
    for loop in (n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))):
        problems += loop_order_problems(loop, shared, line)
        if problems: break
    return problems


def loop_order_problems(loop, shared, line):
    "The loop's body, read as a cycle (it repeats): a barrier between every fill and read of a shared array, and back."
    steps = []
    for stmt in loop.body:
        if isinstance(stmt, ast.Expr) and is_barrier(stmt.value): steps.append(('B', stmt)); continue
        w, r = accesses(stmt, shared)
        if contains_barrier(stmt): return []       # nested barriers: the inner loop is the one to read
        if w: steps.append(('W', stmt))
        if r: steps.append(('R', stmt))
    kinds = [k for k, _ in steps]
    if 'W' not in kinds or 'R' not in kinds: return []
    out = []
    n = len(steps)
    for i, (k, stmt) in enumerate(steps):
        if k not in 'WR': continue
        want = 'R' if k == 'W' else 'W'
        for d in range(1, n + 1):
            k2, s2 = steps[(i + d) % n]
            if k2 == 'B': break
            if k2 == want:
                wrapped = i + d >= n
                if k == 'W':
                    out.append(f"no barrier between filling shared memory ({line(stmt)}) and reading it ("
                               f"{line(s2)}): a thread could read an element another thread has not written yet")
                else:
                    out.append(f"no barrier between reading shared memory ({line(stmt)}) and "
                               f"{'the next pass of the loop filling it again' if wrapped else 'filling it again'} ("
                               f"{line(s2)}): a fast thread could overwrite values a slow thread has not read yet")
                return out[:1]
    return out


# --------------------------------------------------------------------------------------------------
# CUDA C
# --------------------------------------------------------------------------------------------------

def strip_c(src):
    "CUDA C without comments and string literals, each replaced by spaces (lines and columns stay where they were)."
    def blank(m): return re.sub(r'[^\n]', ' ', m.group(0))
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', blank, src, flags=re.S)


def cuda_barrier_problems(src, kernel=None, place=lambda n: f"line {n}"):
    """Sentences for `__syncthreads()` calls inside an `if`/`else` or after an early `return` in the
    kernel's body (the kernel whose name is `kernel`, or every __global__ function). `place(n)` names
    line n of src for the learner (as a line of their cell)."""
    code = strip_c(src)
    problems = []
    for m in re.finditer(r'__global__[^{;]*?\b(\w+)\s*\([^{;]*\)\s*\{', code):
        name = m.group(1)
        if kernel and name != kernel: continue
        start = m.end() - 1
        depth, i = 0, start
        while i < len(code):
            depth += code[i] == '{'
            depth -= code[i] == '}'
            if depth == 0: break
            i += 1
        body = code[start:i + 1]
        base = code.count('\n', 0, start) + 1
        problems += barriers_in_branches(body, base, name, place)
    return problems


def block_header(body, brace):
    "(header text, its position) of the block opening at `brace`: `if (...)`, `for (...)`, `while (...)`, `else`, or ''."
    k = brace - 1
    while k >= 0 and body[k].isspace(): k -= 1
    if k >= 0 and body[k] == ')':
        depth, o = 0, k
        while o >= 0:
            depth += body[o] == ')'
            depth -= body[o] == '('
            if depth == 0: break
            o -= 1
        word = re.search(r'(\w+)\s*$', body[:o])
        start = word.start(1) if word else o
        return body[start:k + 1], start
    word = re.search(r'(\w+)\s*$', body[:k + 1])
    return (word.group(1), word.start(1)) if word else ('', brace)


def c_thread_varying_names(body):
    "Names in a CUDA C kernel body computed from threadIdx, directly or through other names."
    varying = set()
    assignments = re.findall(r'\b(\w+)\s*(?:\[[^\]]*\]\s*)?[-+*/]?=(?!=)\s*([^,;)]*)', body)
    changed = True
    while changed:
        changed = False
        for name, value in assignments:
            if name not in varying and (re.search(r'\bthreadIdx\b', value) or
                                        any(re.search(rf'\b{v}\b', value) for v in varying)):
                varying.add(name); changed = True
    return varying


def barriers_in_branches(body, base_line, kernel, place):
    out = []
    names = c_thread_varying_names(body)
    def varies(header):
        cond = header.split('(', 1)[1] if '(' in header else ''
        if header.lstrip('}').strip().startswith('else'): return True    # the other side of some `if`: assume it splits
        return bool(re.search(r'\bthreadIdx\b', cond) or any(re.search(rf'\b{v}\b', cond) for v in names))
    line_of = lambda pos: place(base_line + body.count('\n', 0, pos))
    for b in re.finditer(r'__syncthreads\s*\(\s*\)', body):
        # The headers of the blocks that enclose the barrier, innermost first, and its own statement's start.
        stack, pos = [], b.start()
        depth, j = 0, pos - 1
        while j >= 0:
            ch = body[j]
            if ch == '}': depth += 1
            elif ch == '{':
                if depth == 0:
                    stack.append(block_header(body, j))
                else: depth -= 1
            j -= 1
        stmt_start = max(body.rfind(';', 0, pos), body.rfind('{', 0, pos), body.rfind('}', 0, pos)) + 1
        own = body[stmt_start:pos]
        stmt_start += len(own) - len(own.lstrip())
        own = own.strip()
        branch = [(h, p) for h, p in stack if re.match(r'(?:else\b|if\s*\(|\}?\s*else\b|for\s*\(|while\s*\()', h) and varies(h)]
        if re.match(r'(?:if\s*\(|else\b|for\s*\(|while\s*\()', own) and varies(own):
            branch.insert(0, (own, stmt_start))
        if branch:
            h, p = branch[0]
            if re.match(r'(?:for|while)\b', h):
                out.append(f"the __syncthreads() at {line_of(b.start())} ({kernel}) is inside the loop `{h[:60]}` "
                           f"({line_of(p)}), whose number of passes differs between threads: a thread with fewer passes "
                           "skips barriers the others wait at")
                break
            out.append(f"the __syncthreads() at {line_of(b.start())} ({kernel}) is inside `{h.split(')')[0][:40]}"
                       f"{')' if '(' in h else ''}` ({line_of(p)}): threads for which the condition is false never "
                       "reach it, so the block deadlocks or its threads pass different barriers")
        ret = [r for r in re.finditer(r'\bif\s*\(([^;{]*)\)\s*return\b', body[:b.start()]) if varies('if (' + r.group(1))]
        if ret and not out:
            out.append(f"the `return` at {line_of(ret[0].start())} ({kernel}) comes before the __syncthreads() at "
                       f"{line_of(b.start())}: the threads that return early never reach it")
        if out: break
    return out

"""Loops of CUDA C that never end, read from the source before anything runs.

A loop whose condition reads only variables that nothing in the loop changes (`for (int i = 0; i < k; )`, a
`while` that forgets its `++i`, a step that advances another variable or throws its value away, `i + 32`) runs
forever once its condition holds. On a GPU that is a kernel that never returns; and before that, nvcc may delete
the loop whole (C++ lets a compiler assume that a loop without side effects ends), so that the machine code has
no multiply-adds and a check of it would blame the wrong thing. Reading the source names the loop and its line.

The reading errs towards silence: a condition that calls a function, reads memory (`a[i]`, `*p`, `p->x`), or a
loop that can leave by break, return or goto, or that may change its variables through a pointer or a reference
(`&i`, or `i` passed to a function of the source that takes an `int&`), is never called endless."""
import re

from .barrier_placement import strip_c

# Words in a condition that are not variables a loop could change.
NOT_VARIABLES = {'true', 'false', 'sizeof', 'int', 'unsigned', 'long', 'size_t', 'float', 'double', 'bool', 'char',
                 'short', 'const', 'auto', 'nullptr', 'NULL'}
# Functions a condition may call without changing anything.
PURE_FUNCTIONS = {'min', 'max', 'fminf', 'fmaxf', 'abs', 'cdiv', 'sizeof', 'static_cast', 'int', 'size_t', 'unsigned'}


def closing(code, i):
    "The index of the bracket that closes the one at code[i] ('(' or '{')."
    opening, close = code[i], {'(': ')', '{': '}'}[code[i]]
    depth = 0
    for j in range(i, len(code)):
        depth += (code[j] == opening) - (code[j] == close)
        if depth == 0: return j
    return len(code) - 1


def statement_end(code, i):
    "The index just past the statement that starts at code[i] (after spaces): a { block }, a for/while/if with its body, a do-while, or up to its `;`."
    while i < len(code) and code[i].isspace(): i += 1
    if i >= len(code): return i
    if code[i] == '{': return closing(code, i) + 1
    head = re.match(r'(for|while|if|switch)\s*\(', code[i:])
    if head:
        end = statement_end(code, closing(code, i + head.end() - 1) + 1)
        other = re.match(r'\s*else\b', code[end:]) if head.group(1) == 'if' else None
        return statement_end(code, end + other.end()) if other else end
    if re.match(r'do\b', code[i:]):
        end = statement_end(code, i + 2)
        tail = re.match(r'\s*while\s*\(', code[end:])
        return statement_end(code, closing(code, end + tail.end() - 1) + 1) if tail else end
    depth = 0
    for j in range(i, len(code)):
        depth += (code[j] in '({') - (code[j] in ')}')
        if depth < 0: return j
        if code[j] == ';' and depth == 0: return j + 1
    return len(code)


def top_level_parts(text, separator=';'):
    "text split at the separators outside brackets."
    parts, depth, start = [], 0, 0
    for j, ch in enumerate(text):
        depth += (ch in '([{') - (ch in ')]}')
        if ch == separator and depth == 0:
            parts.append(text[start:j]); start = j + 1
    return parts + [text[start:]]


def readable_code(src):
    "src without comments, strings and preprocessor lines (#pragma unroll, ...), each blanked so that positions stay."
    return re.sub(r'(?m)^[ \t]*#[^\n]*', lambda m: ' ' * len(m.group(0)), strip_c(src))


def loops(code):
    """Every for/while/do-while loop of `code` (from readable_code): (position, kind, header, condition, step, body),
    the step '' for a while loop. A range-based for (`for (x : xs)`) is left out."""
    do_bodies = {}
    for m in re.finditer(r'\bdo\b(?=\s*[{\w])', code):
        end = statement_end(code, m.end())
        spaces = re.match(r'\s*(?=while\s*\()', code[end:])
        if spaces: do_bodies[end + spaces.end()] = (m.start(), code[m.end():end])     # keyed by where its `while` stands
    found = []
    for m in re.finditer(r'\b(for|while)\s*\(', code):
        open_paren = m.end() - 1
        close = closing(code, open_paren)
        inside = code[open_paren + 1:close]
        if m.group(1) == 'for':
            parts = top_level_parts(inside)
            if len(parts) != 3: continue
            _, condition, step = parts
        else:
            condition, step = inside, ''
        if m.start() in do_bodies:
            start, body = do_bodies[m.start()]
            found.append((start, 'do', f"do ... while ({' '.join(condition.split())})", condition, '', body))
            continue
        body = code[close + 1:statement_end(code, close + 1)]
        found.append((m.start(), m.group(1), ' '.join(code[m.start():close + 1].split()), condition, step, body))
    return found


def changes(name, text):
    "Whether `text` assigns to the variable `name`, steps it (++, --) or takes its address (so that something else may)."
    n = re.escape(name)
    return bool(re.search(rf'(?<![\w.])(?<!->){n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?<![\w.])(?<!->){n}\s*(?:\+\+|--)|'
                          rf'(?:\+\+|--)\s*{n}\b|(?<![&\w)\]])&\s*{n}\b', text))


def condition_variables(condition):
    "The variables a loop's condition reads (members after `.` and function names left out), in order."
    names = []
    for m in re.finditer(r'(?<![\w.])(?<!->)([A-Za-z_]\w*)\b(?!\s*\()', condition):
        if m.group(1) not in NOT_VARIABLES and m.group(1) not in names: names.append(m.group(1))
    return names


def passed_by_reference(name, body, code):
    """Whether `body` passes the variable `name` itself to a function that `code` defines with a reference parameter
    there (`void step(int& i)`), through which the call may change it."""
    for call in re.finditer(r'\b(\w+)\s*(?:<[^;(){}]*>)?\s*\(', body):
        arguments = [a.strip() for a in top_level_parts(body[call.end():closing(body, call.end() - 1)], ',')]
        for i in (i for i, a in enumerate(arguments) if a == name):
            for definition in re.finditer(rf'\b{re.escape(call.group(1))}\s*\(([^()]*)\)\s*(?:const\s*)?\{{', code):
                declared = top_level_parts(definition.group(1), ',')
                if i < len(declared) and re.search(r'(?<!&)&(?!&)', declared[i]) and not re.search(r'\bconst\b', declared[i]):
                    return True
    return False


def may_change_unseen(condition, body, code):
    "Whether the condition or the body may change what the condition reads in ways the reading cannot follow."
    calls = set(re.findall(r'\b(\w+)\s*\(', condition)) - PURE_FUNCTIONS
    reads_memory = re.search(r'\[|->|(?:^|[(!&|=<>,+\-])\s*\*', condition)
    leaves = re.search(r'\b(?:break|return|goto|asm|__trap|exit)\b', body)
    return bool(calls or reads_memory or leaves or any(passed_by_reference(n, body, code) for n in condition_variables(condition)))


def in_words(names):
    return names[0] if len(names) == 1 else ', '.join(names[:-1]) + ' or ' + names[-1]


def endless_loop_problems(src, place=lambda n: f"line {n}"):
    """Sentences for the loops of CUDA C source `src` that can never end once they start, each naming the loop
    and its line (`place(n)` names line n of src for the learner, as a line of their cell)."""
    code = readable_code(src)
    problems = []
    for position, kind, header, condition, step, body in loops(code):
        names = condition_variables(condition)
        if may_change_unseen(condition, body, code): continue
        if any(changes(name, step) or changes(name, body) for name in names): continue
        line = place(code.count('\n', 0, position) + 1)
        what = f"`{header}`" if len(header) <= 90 else f"`{header[:87]}...`"
        if not names:
            problems.append(f"the loop {what} at {line} never ends: it has no condition that can become false and no "
                            "break or return")
            continue
        counter = in_words(names)
        stepped = [w for w in condition_variables(step) if changes(w, step)]
        if kind != 'for': how = f"nothing in its body changes {counter}"
        elif not step.strip(): how = f"its step is empty and nothing in its body changes {counter}"
        elif stepped: how = f"its step `{' '.join(step.split())}` changes {in_words(stepped)}, not {counter}, and nothing in its body does"
        else: how = (f"its step `{' '.join(step.split())}` computes a value and throws it away, and nothing in its body "
                     f"changes {counter}")
        problems.append(f"the loop {what} at {line} never advances its counter, so it never ends: {how}, so "
                        f"its condition `{' '.join(condition.split())}` stays true once it holds. On a GPU the kernel would "
                        "never return, and nvcc may even delete the loop (C++ lets a compiler assume a loop without side "
                        "effects ends), leaving a kernel without the loop's work")
    return problems

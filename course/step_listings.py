"""One step's kernel, whole and readable: a template with switches, its switches evaluated.

The kernels of a ladder (notebook 13's steps 3 to 8, say) are one C++ template with compile-time switches
(`PERSISTENT`, `CLUSTER`, `OVERLAP`, ...): one source of truth, which the compiler specializes per step. A learner
should not have to evaluate those switches in their head. `specialize(source, params)` does what the compiler does
to the text: every `if constexpr` / `if` whose condition is a constant for these parameters keeps only the branch
taken, every `a ? b : c` whose condition is constant keeps its side, a lambda (`auto name = [&](...) {...};`) that
nothing calls any more is left out, with the comment lines just above it, and the parameters are listed as constants
at the top. The result is the kernel a step compiles, as text to read; `step_changes` is the difference between
two steps, line by line, and `patched` its inverse: a listing written as the one before plus a diff in that form
(notebook 11's steps). Nothing here is compiled: the notebooks compile the template itself.

With `prune=True` it also leaves out what only the removed branches needed: declarations that nothing uses any more,
`static_assert(!SWITCH || ...)` checks about a switch that is off, and comment paragraphs that open with a condition on
the parameters that is false (`// OVERLAP (step 7): ...` where OVERLAP is false). With `keep_template=True` the
template line stays, the parameters written above it: for a piece that is still a template in its other parameters.
"""
import difflib, re, textwrap

_WORD = re.compile(r'[A-Za-z_]\w*')


def constant_value(condition, params):
    """The value of a C++ condition made only of `params`, integer and boolean literals and operators; None where it
    names anything else (a variable of the kernel)."""
    names = set(_WORD.findall(condition)) - {'true', 'false'}
    if not names <= set(params): return None
    text = condition.replace('&&', ' and ').replace('||', ' or ')
    text = re.sub(r'!(?!=)', ' not ', text).replace('true', 'True').replace('false', 'False')
    text = re.sub(r'(\w+)\s*/\s*(\w+)', r'\1 // \2', text)                # C's integer division
    try:
        return eval(text, {'__builtins__': {}}, dict(params))
    except Exception:
        return None


def _skip_space(text, i):
    while i < len(text):
        if text[i].isspace(): i += 1
        elif text.startswith('//', i): i = text.index('\n', i) if '\n' in text[i:] else len(text)
        else: break
    return i


def _matching(text, i, open_, close):
    "Index just past the bracket that closes the one at text[i] (brackets inside // comments do not count)."
    depth, j = 0, i
    while j < len(text):
        if text.startswith('//', j):
            j = text.find('\n', j)
            if j < 0: break
            continue
        if text[j] == open_: depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0: return j + 1
        j += 1
    raise ValueError(f"unbalanced {open_}{close} in the template")


def _statement_end(text, i):
    "Index just past the statement that starts at text[i]: a { block }, an if (with its else), or up to its ';'."
    i = _skip_space(text, i)
    if text[i] == '{': return _matching(text, i, '{', '}')
    m = re.compile(r'(if\s*(constexpr\s*)?\(|for\s*\(|while\s*\()').match(text, i)
    if m:
        end = _matching(text, m.end() - 1, '(', ')')
        end = _statement_end(text, end)
        if m.group(0).startswith('if'):
            j = _skip_space(text, end)
            if re.compile(r'else\b').match(text, j): end = _statement_end(text, j + 4)
        return end
    depth = 0
    for j in range(i, len(text)):
        if text[j] in '([{': depth += 1
        elif text[j] in ')]}': depth -= 1
        elif text[j] == ';' and depth == 0: return j + 1
    raise ValueError("a statement without its ';'")


def _unwrap(block):
    "A { block } as the statements it holds, one level less indented (its first line without indent); any other statement as it is."
    block = block.strip()
    if not block.startswith('{'): return block
    lines = block[1:-1].strip('\n').split('\n')
    lines = [l[4:] if l.startswith('    ') else l for l in lines]
    return '\n'.join(lines).strip()


def _fold_ifs(text, params):
    "Every if (or if constexpr) whose condition is constant, replaced by the branch it takes (nothing where none)."
    pattern = re.compile(r'\bif\s*(constexpr\s*)?\(')
    start = 0
    while True:
        m = pattern.search(text, start)
        if not m: return text
        cond_end = _matching(text, m.end() - 1, '(', ')')
        value = constant_value(text[m.end():cond_end - 1], params)
        if value is None:
            start = m.end()
            continue
        then_start = _skip_space(text, cond_end)
        then_end = _statement_end(text, then_start)
        end, else_part = then_end, ''
        j = _skip_space(text, then_end)
        if re.compile(r'else\b').match(text, j):
            else_start = _skip_space(text, j + 4)
            end = _statement_end(text, else_start)
            else_part = text[else_start:end]
        line_start = text.rfind('\n', 0, m.start()) + 1
        kept = _unwrap(text[then_start:then_end] if value else else_part)
        if not kept and text[line_start:m.start()].strip() == '':       # a whole line (or lines) that goes away
            line_end = text.find('\n', end)
            rest = text[end:line_end if line_end >= 0 else len(text)]
            if rest.strip() == '' or rest.strip().startswith('//'):
                text = text[:line_start] + text[(line_end + 1) if line_end >= 0 else len(text):]
                start = line_start
                continue
        text = text[:m.start()] + kept + text[end:]
        start = m.start()


_TERNARY = re.compile(r'([A-Za-z_]\w*(?:\s*(?:[<>]=?|==|!=)\s*\w+)?)\s*\?\s*([^?:;]+?)\s*:\s*([^?:;,)]+)')


def _fold_ternaries(text, params):
    def choose(m):
        value = constant_value(m.group(1), params)
        if value is None: return m.group(0)
        return m.group(2) if value else m.group(3)
    return _TERNARY.sub(choose, text)


_LAMBDA = re.compile(r'^[ \t]*auto\s+(\w+)\s*=\s*\[[^\]]*\]\s*\(', re.M)


def _drop_unused_lambdas(text):
    """`text` without the lambdas whose name appears nowhere else (repeatedly: one may have been used only by another),
    each with the comment lines right above it; and how many were dropped."""
    dropped = 0
    while True:
        for m in _LAMBDA.finditer(text):
            body = text.index('{', _matching(text, m.end() - 1, '(', ')'))
            end = _skip_space(text, _matching(text, body, '{', '}'))
            if not text.startswith(';', end): continue
            end = text.find('\n', end)
            end = len(text) if end < 0 else end + 1
            rest = text[:m.start()] + text[end:]
            if re.search(rf'\b{m.group(1)}\b', re.sub(r'//[^\n]*', '', rest)): continue     # a call, not a comment
            start = m.start()
            while start > 0:                                     # the comment lines that introduce it
                above = text.rfind('\n', 0, start - 1) + 1
                if not text[above:start].lstrip().startswith('//'): break
                start = above
            text, dropped = text[:start] + text[end:], dropped + 1
            break
        else:
            return text, dropped


def _code(text):
    "The text without its // comments (a name in a comment is not a use)."
    return re.sub(r'//[^\n]*', '', text)


def _split_top(text, separator):
    "The parts of `text` between the `separator`s that stand outside any bracket."
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        if text[i] in '([{': depth += 1
        elif text[i] in ')]}': depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i = i + len(separator)
            continue
        i += 1
    return parts + [text[start:]]


_ASSERT = re.compile(r'^[ \t]*static_assert\((?P<cond>.*),\s*"[^"]*"\);[ \t]*(?://[^\n]*)?\n', re.M)


def _drop_vacuous_asserts(text, params):
    """`text` without the static_asserts of the form `!SWITCH || ...` (any first disjunct that is constant) whose
    first disjunct holds for `params`: a check about a switch that is off says nothing about this step. How many."""
    dropped = 0
    def drop(m):
        nonlocal dropped
        disjuncts = _split_top(m.group('cond'), '||')
        if len(disjuncts) > 1 and constant_value(disjuncts[0].strip(), params) is True:
            dropped += 1
            return ''
        return m.group(0)
    return _ASSERT.sub(drop, text), dropped


_SWITCH_COMMENT = re.compile(r'^[ \t]*// (?P<cond>[A-Za-z_][\w <>=!&|]*?)(?: \([^)]*\))?: ')


def _drop_comments_on_switches_off(text, params):
    """`text` without the comment paragraphs that open with a condition on `params` that is false (`// OVERLAP (step
    7): ...`): the paragraph runs to the next such opening or to the end of the comment lines. How many."""
    lines, out, dropping, dropped = text.split('\n'), [], False, 0
    for line in lines:
        if not line.lstrip().startswith('//'):
            dropping = False
        else:
            m = _SWITCH_COMMENT.match(line)
            value = constant_value(m.group('cond'), params) if m else None
            if value is not None:
                dropping = not value
                dropped += dropping
        if not dropping: out.append(line)
    return '\n'.join(out), dropped


_DECLARATION = re.compile(r'^[ \t]*(?:(?:const|constexpr|static|volatile)\s+)*'
                          r'(?!(?:return|else|delete|throw|goto|case|using|typedef|extern|asm)\b)'
                          r'[A-Za-z_][\w:]*(?:<[^;<>]*>)?[\s*&]+(?P<declarators>[^;]*);[ \t]*(?://[^\n]*)?$')
_DECLARATOR = re.compile(r'^\s*[*&]*\s*(?P<name>[A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*(?:=.*)?$', re.S)


def _declared_names(line):
    "The names a one-line declaration declares (`int* a = x, b[4];` -> ['a', 'b']), or None if it is not one."
    m = _DECLARATION.match(line)
    if not m: return None
    names = [_DECLARATOR.match(part) for part in _split_top(m.group('declarators'), ',')]
    return None if not all(names) else [n.group('name') for n in names]


def _drop_unused_declarations(text, source):
    """`text` without the one-line declarations whose names it no longer uses, though `source` (the template) does:
    each used only by code the switches removed. Repeatedly (one may have been used only in another's initializer);
    how many."""
    uses = lambda name, where: len(re.findall(rf'\b{name}\b', _code(where)))
    dropped = 0
    while True:
        lines = text.split('\n')
        for i, line in enumerate(lines):
            names = _declared_names(line)
            if names and all(uses(n, text) == uses(n, line) and uses(n, source) > uses(n, line) for n in names):
                text, dropped = '\n'.join(lines[:i] + lines[i + 1:]), dropped + 1
                break
        else:
            return text, dropped


def _counted(n, what):
    return f"{n} {what}{('es' if what.endswith('h') else 's') if n != 1 else ''}"


def specialize(source, params, title=None, prune=False, keep_template=False):
    """The kernel of `source` (a template whose parameters are `params`) with its constant switches evaluated, and its
    template line replaced by the parameters as constants (and `title`, a comment, above them). `prune`: also leave out
    the declarations, static_asserts and comment paragraphs that only the removed code needed (see the module's
    docstring), and say how many in the title. `keep_template`: keep the template line, the parameters above it."""
    text, dropped = _drop_unused_lambdas(_fold_ternaries(_fold_ifs(source, params), params))
    if prune:
        text, asserts = _drop_vacuous_asserts(text, params)
        text, comments = _drop_comments_on_switches_off(text, params)
        text, declarations = _drop_unused_declarations(text, source)
        left_out = [_counted(n, what) for n, what in ((dropped, 'lambda'), (declarations, 'declaration'),
                                                      (asserts, 'static_assert')) if n]
        if comments: left_out.append(f"comments on {_counted(comments, 'switch')} off")
        if left_out:
            title = (f"{title}; " if title else '') + "left out for these switches: " + ', '.join(left_out)
    elif dropped:
        title = (f"{title}; " if title else '') + f"{dropped} lambda(s) this step never calls left out"
    m = re.search(r'template\s*<[^>]*>\s*\n', text)
    if m:
        values = ', '.join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items())
        if keep_template:
            lines = textwrap.wrap(values, 110, initial_indent="// here with ", subsequent_indent='//    ',
                                  break_on_hyphens=False)
            text = text[:m.start()] + '\n'.join(lines) + '\n' + text[m.start():]
        else:
            lines = textwrap.wrap(values, 110, initial_indent="// the template's parameters: ",
                                  subsequent_indent='//    ', break_on_hyphens=False)
            heading = textwrap.wrap(title, 132, initial_indent='// ', subsequent_indent='//    ',
                                    break_on_hyphens=False) if title and prune else [f"// {title}"] if title else []
            text = text[:m.start()] + ''.join(h + '\n' for h in heading) + '\n'.join(lines) + '\n' + text[m.end():]
    return text.strip('\n') + '\n'


SKIPPED = '  ...'      # how step_changes marks the unchanged lines between two runs of changes


def code_lines(listing):
    "`listing` without the lines that hold only a // comment (a comment after code on its line stays)."
    return '\n'.join(l for l in listing.split('\n') if not l.lstrip().startswith('//'))


def step_changes(before, after, names=('before', 'after'), code_only=False):
    """The lines that differ between two listings: a unified diff with one line of context, its line numbers left out.
    `code_only`: lines that hold only a // comment are left out of both listings first, so that a change whose diff
    is mostly rewritten comments shows its code."""
    if code_only: before, after = code_lines(before), code_lines(after)
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), *names, n=1, lineterm='')
    return '\n'.join(l if not l.startswith('@@') else SKIPPED for l in diff)



def patched(before, changes):
    """`before` with `changes` made: the inverse of `step_changes`, for a listing written as the one before plus its
    diff. `changes` is a diff in step_changes's form: a line of context starts with ' ' (an empty line counts as an
    empty line of context), a removed line with '-', an added one with '+', and a line '  ...' separates two runs of
    changes (the '--- '/'+++ ' lines at its top, if any, are skipped). Each run's context and removed lines must
    follow each other in `before`, after the run before; a run that does not apply raises ValueError, naming it."""
    lines = before.split('\n')
    text = changes.strip('\n').split('\n')
    if len(text) >= 2 and text[0].startswith('--- ') and text[1].startswith('+++ '): text = text[2:]
    runs, run = [], []
    for line in text:
        if line == SKIPPED: runs.append(run); run = []
        elif line[:1] in ('', ' ', '-', '+'): run.append(line)
        else: raise ValueError(f"a line of a diff starts with ' ', '-' or '+': {line!r}")
    runs.append(run)
    out, at = [], 0
    for run in (r for r in runs if r):
        old = [l[1:] for l in run if not l.startswith('+')]
        new = [l[1:] for l in run if not l.startswith('-')]
        found = next((i for i in range(at, len(lines) - len(old) + 1) if lines[i:i + len(old)] == old), None)
        if found is None:
            first = next(l for l in run if not l.startswith('+')) if old else run[0]
            raise ValueError(f"this run of changes does not apply (its lines are not there, in order): {first!r}")
        out += lines[at:found] + new
        at = found + len(old)
    return '\n'.join(out + lines[at:])

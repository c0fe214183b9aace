"""One step's kernel, whole and readable: a template with switches, its switches evaluated.

The kernels of a ladder (notebook 13's steps 3 to 8, say) are one C++ template with compile-time switches
(`PERSISTENT`, `CLUSTER`, `OVERLAP`, ...): one source of truth, which the compiler specializes per step. A learner
should not have to evaluate those switches in their head. `specialize(source, params)` does what the compiler does
to the text: every `if constexpr` / `if` whose condition is a constant for these parameters keeps only the branch
taken, every `a ? b : c` whose condition is constant keeps its side, a lambda (`auto name = [&](...) {...};`) that
nothing calls any more is left out, with the comment lines just above it, and the parameters are listed as constants
at the top. The result is the kernel a step compiles, as text to read; `step_changes` is the difference between
two steps, line by line. Nothing here is compiled: the notebooks compile the template itself.
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


def specialize(source, params, title=None):
    """The kernel of `source` (a template whose parameters are `params`) with its constant switches evaluated, and its
    template line replaced by the parameters as constants (and `title`, a comment, above them)."""
    text, dropped = _drop_unused_lambdas(_fold_ternaries(_fold_ifs(source, params), params))
    if dropped: title = (f"{title}; " if title else '') + f"{dropped} lambda(s) this step never calls left out"
    m = re.search(r'template\s*<[^>]*>\s*\n', text)
    if m:
        values = ', '.join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items())
        lines = textwrap.wrap(values, 110, initial_indent="// the template's parameters: ", subsequent_indent='//    ',
                              break_on_hyphens=False)
        text = text[:m.start()] + (f"// {title}\n" if title else '') + '\n'.join(lines) + '\n' + text[m.end():]
    return text.strip('\n') + '\n'


def step_changes(before, after, names=('before', 'after')):
    "The lines that differ between two listings: a unified diff with one line of context, its line numbers left out."
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), *names, n=1, lineterm='')
    return '\n'.join(l if not l.startswith('@@') else '  ...' for l in diff)

"What nvcc makes of a source: machine code (SASS) where cuobjdump is installed, else PTX."
import re, subprocess
from pathlib import Path

from .cuda_library import run_nvcc
from .cuda_toolkit import cuda_arch, cuda_tool


def cuda_disassembly(cuda_src, arch=None, extra_flags=()):
    """The machine code (SASS) nvcc makes of `cuda_src`, from cuobjdump; where cuobjdump is missing,
    the PTX (the portable assembly the machine code is made from) instead. Returns (kind, text)."""
    arch = arch or cuda_arch()
    cuobjdump = cuda_tool('cuobjdump')
    if cuobjdump:
        cubin = run_nvcc(['-cubin', f'-arch={arch}', '-O3', *extra_flags], cuda_src, '.cubin', what='cuda_disassembly')
        sass = subprocess.run([cuobjdump, '-sass', str(cubin)], capture_output=True, text=True, check=True).stdout
        if 'Function :' in sass: return 'SASS', sass
    return 'PTX', cuda_ptx(cuda_src, arch, extra_flags)


def cuda_ptx(cuda_src, arch=None, extra_flags=()):
    "The PTX (the portable assembly) that nvcc makes of `cuda_src`, as text."
    arch = arch or cuda_arch()
    return Path(run_nvcc(['-ptx', f'-arch={arch}', '-O3', *extra_flags], cuda_src, '.ptx', what='cuda_ptx')).read_text()


def kernel_listing(disassembly, kernel_substring):
    "The part of a SASS or PTX listing that belongs to the kernel whose (mangled) name contains the given text."
    kind, text = disassembly
    if kind == 'SASS':
        parts = re.split(r'\n(?=\s*Function : )', text)
    else:
        parts = re.split(r'\n(?=\.visible \.entry|\.entry)', text)
    hits = [p for p in parts if kernel_substring in p.split('\n', 1)[0]]
    return hits[0] if hits else ''


def innermost_loop(ptx):
    """The PTX lines of the innermost loop that does multiply-adds: from a label to the branch back to
    it, the shortest such stretch with an `fma` in it. Empty if the loop was fully unrolled."""
    lines = [l.strip() for l in ptx.splitlines() if l.strip() and not l.strip().startswith('//')]
    loops = []
    for j, line in enumerate(lines):
        back = re.match(r'(?:@!?%p\w+\s+)?bra(?:\.uni)?\s+(\$\w+);', line)
        if not back: continue
        start = next((i for i in range(j) if lines[i] == back.group(1) + ':'), None)
        if start is None: continue
        body = lines[start + 1:j + 1]
        if any(l.startswith('fma') for l in body): loops.append(body)
    return min(loops, key=len) if loops else []


def loop_cost(ptx):
    "PTX instructions per fused multiply-add in the innermost loop of `ptx` (None if that loop was fully unrolled)."
    body = innermost_loop(ptx)
    fmas = sum(line.startswith('fma') for line in body)
    return len(body) / fmas if fmas else None

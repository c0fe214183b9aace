"""Wrong answers a learner found that earlier checks let pass, or sentences that missed the mistake; kept so they
stay caught. (The file name keeps them apart from the per-lesson lists; they are loaded with them.)"""
from course.exercises.learner_code import solution_sections

from . import Wrong

WRONG = [
    Wrong('01.1', 'blockDim.x for the row (square blocks hide it)',
          change=("r = blockIdx.y*blockDim.y + threadIdx.y", "r = blockIdx.y*blockDim.x + threadIdx.y"),
          expect=r"with 8x2 blocks|8 x 2|element|outside|never written"),
    Wrong('01.1', 'a float index (/ instead of //)',
          change=("out[c*h + r] = m[r*w + c]", "out[c*h + r] = m[(r*w + c) / 1]"),
          expect=r"the index is a float; an index into memory is an integer"),
    Wrong('01.2', 'the device compared as an object (cpu and cpu:0 differ)',
          body=(lambda pre, sec: (pre + sec['01.2']).replace(
              "    device = torch.device(device).type                # 'cuda', 'cpu', ...: compare device types, not 'cuda:0'\n", '')
              .replace("(t.device.type != device,", "(t.device != torch.device(device),"))(*solution_sections('01')),
          expect=r"device='cpu:0'\), good inputs"),
    Wrong('09.2', 'no sync() after the warm-up',
          change=("    for _ in range(warmup): fn(*args)             # the first calls compile and warm caches: not timed\n    sync()\n",
                  "    for _ in range(warmup): fn(*args)             # the first calls compile and warm caches: not timed\n"),
          expect=r"starts the clock right after the warm-up calls, with their work still queued.*no sync\(\) comes between the "
                 r"warm-up and the first reading of the clock"),
    Wrong('04.2', 'the barrier inside the load loop',
          change=("            ns[i*tw + tc] = n[(idx + i)*w + c] if c < w and idx + i < k else 0.\n        syncb.wait()\n",
                  "            ns[i*tw + tc] = n[(idx + i)*w + c] if c < w and idx + i < k else 0.\n            syncb.wait()\n"),
          expect=r"is inside the loop of line \d+, whose number of passes differs between threads"),
    Wrong('07.2', 'a barrier inside a loop whose passes differ between threads',
          change=("        for (int i = tr; i < TK; i += TH) ns[i][tc] = c < w && idx+i < k ? n[(idx+i)*w + c] : 0.0f;\n        __syncthreads();\n",
                  "        for (int i = tr; i < TK; i += TH) {\n            ns[i][tc] = c < w && idx+i < k ? n[(idx+i)*w + c] : 0.0f;\n"
                  "            __syncthreads();\n        }\n"),
          expect=r"is inside the loop `for \(int i = tr; .*whose number of passes differs between threads"),
]

# Right answers written unusually, which earlier checks rejected: each must not be 'not yet'.
RIGHT = [
    Wrong('12.2', 'a rotation by one place per row (any conflict-free permutation is right)',
          change=('chunk ^ (row % 8)', '(chunk + row) % 8'), expect=''),
    Wrong('12.2', 'the XOR written without brackets (& binds tighter than ^)',
          change=('chunk ^ (row % 8)', 'chunk ^ row & 7'), expect=''),
    Wrong('12.1', 'the map in bit operations',
          change=("    row = group + 8 * (i % 4 >= 2)              # elements 2, 3 and 6, 7: 8 rows further down\n"
                  "    col = thread * 2 + i % 2 + 8 * (i >= 4)     # elements 4 to 7: the same pattern in A's right half, k = 8..15\n",
                  "    row = group | ((i >> 1) & 1) << 3\n    col = thread << 1 | (i & 1) | (i >> 2) << 3\n"), expect=''),
    Wrong('04.1', 'the second barrier skipped after the last phase (the same for every thread)',
          change=("        syncb.wait()                          # every thread has read them",
                  "        if idx + tw < k: syncb.wait()         # every thread has read them"), expect=''),
    Wrong('04.2', 'the second barrier skipped after the last phase',
          change=("        for i in range(tk): p += ms[tr*tk + i] * ns[i*tw + tc]\n        syncb.wait()\n",
                  "        for i in range(tk): p += ms[tr*tk + i] * ns[i*tw + tc]\n        if idx + tk < k: syncb.wait()\n"), expect=''),
    Wrong('06.1', 'the second barrier skipped after the last phase, in CUDA C',
          change=("        for (int i = 0; i < TK; ++i) p += ms[tr][i] * ns[i][tc];\n        __syncthreads();\n",
                  "        for (int i = 0; i < TK; ++i) p += ms[tr][i] * ns[i][tc];\n        if (idx + TK < k) __syncthreads();\n"), expect=''),
    Wrong('04.1', 'the ReLU as a conditional expression (bias read twice in it)',
          change=("out[r*w + c] = max(p + bias[c], 0.)", "out[r*w + c] = p + bias[c] if p + bias[c] > 0 else 0."), expect=''),
]

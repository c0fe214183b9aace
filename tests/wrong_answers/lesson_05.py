"Wrong answers for notebook 05's exercises (CUDA C with dynamic shared memory), and right answers written unusually."
from . import Wrong
from .lesson_07 import changed, endless_loop

# 05.2: the lines of the reference solution the wrong answers change
V_LOAD = "vs[threadIdx.x] = i < k ? v[i] : 0.0f;"
ROW_LOOP = "for (int j = lane; j < CHUNK && c0 + j < k; j += 32) acc += m[(size_t)row*k + c0 + j] * vs[j];"
DEVICE_CHECK = '        if not t.is_cuda: raise ValueError(f"{name} must be a CUDA tensor")\n'
SIZES = "    h, k = m.shape\n"
UNGUARDED_V = r"matvec_k reads v without a bound check at line \d+ of the `#\| exercise 05\.2` cell \(`vs\[threadIdx\.x\] = .*`\): .*no comparison of the index with k"
V_ON_THE_CPU = r"matvec (?:does not refuse v on the CPU \(with m on the GPU\) itself|hands v on the CPU to the launcher instead of refusing it itself|accepts v on the CPU)"


def uncoalesced(step):
    "The sentence for loads of m whose address moves `step` bytes from lane to lane."
    return (rf"matvec_k reads m uncoalesced: in its PTX, `ld\.global[^`]*` loads from an address that moves by {step} bytes "
            rf"from one lane of a warp to the next \(neighbouring lanes read elements {step // 4} apart\), so one warp's load "
            rf"touches {min(32, step)} sectors of 32 bytes where 4 would do")


WRONG = [
    # 05.1: a fused bias + ReLU epilogue, with a run-time tile width
    Wrong('05.1', 'the ReLU missing',
          change=("out[r*w + c] = fmaxf(p + bias[c], 0.0f);", "out[r*w + c] = p + bias[c];"),
          expect=r"never clamps at 0 .*the ReLU is missing"),
    Wrong('05.1', 'static shared arrays instead of extern __shared__',
          change=("    extern __shared__ float sh[];", "    __shared__ float sh[2*32*32];"),
          expect=r"declares no dynamic shared memory"),
    Wrong('05.1', 'the second barrier missing',
          change=("ns[i*tw + tc];\n        __syncthreads();\n", "ns[i*tw + tc];\n"),
          expect=r"two __syncthreads\(\) per phase.*has 1 barriers"),
    Wrong('05.1', 'a barrier inside the guard',
          change=("        __syncthreads();\n        for (int i", "        if (r < h && c < w) __syncthreads();\n        for (int i"),
          expect=r"the __syncthreads\(\) at line \d+ of the `#\| exercise 05.1` cell \(matmul_bias_relu_k\) is inside `if \(r < h && c < w\)`"),
    Wrong('05.1', 'the bias taken by row',
          change=("fmaxf(p + bias[c], 0.0f)", "fmaxf(p + bias[r], 0.0f)"),
          cpu='not checked here',
          expect=r"the bias taken by row|reads past the end .*of bias"),
    Wrong('05.1', 'the write guard lets row h through',
          change=("if (r < h && c < w) out[r*w + c]", "if (r <= h && c < w) out[r*w + c]"),
          cpu='not checked here',
          expect=r"writes \d+ element\(s\) past the end of out"),
    Wrong('05.1', 'the launch gives room for one tile only',
          change=("size_t shared_bytes = 2 * tw * tw * sizeof(float);", "size_t shared_bytes = tw * tw * sizeof(float);"),
          cpu='not checked here',
          expect=r"Invalid __shared__|enough dynamic shared memory for both of its tiles"),
    Wrong('05.1', 'the loop over the tiles never advances (its step left empty)',
          change=("for (int idx = 0; idx < k; idx += tw)", "for (int idx = 0; idx < k; )"),
          expect=endless_loop('05.1', 'for (int idx = 0; idx < k; )', r"its step is empty and nothing in its body changes idx or k")),
    Wrong('05.1', 'the loop over the tiles as a while loop that forgets idx += tw',
          change=("    for (int idx = 0; idx < k; idx += tw) {\n", "    int idx = 0;\n    while (idx < k) {\n"),
          expect=endless_loop('05.1', 'while (idx < k)', r"nothing in its body changes idx or k")),
    Wrong('05.1', 'a missing semicolon',
          change=("float p = 0.0f;\n    for (int idx", "float p = 0.0f\n    for (int idx"),
          expect=r"nvcc cannot compile bias_relu_cuda_src:.*line \d+ of the `#\| exercise 05.1` cell"),

    # 05.2: a matrix-vector product in CUDA C, and its wrapper
    Wrong('05.2', 'the wrapper does not check the device',
          change=('        if not t.is_cuda: raise ValueError(f"{name} must be a CUDA tensor")\n', ''),
          expect=r"matvec hands m on the CPU to the launcher instead of refusing it itself"),
    Wrong('05.2', 'the shuffle reduction starts at offset 8',
          change=("for (int d = 16; d > 0; d /= 2)", "for (int d = 8; d > 0; d /= 2)"),
          expect=r"adds up its partial sums in 4 shuffle steps"),
    Wrong('05.2', 'the second barrier missing',
          change=("vs[j];\n        __syncthreads();\n", "vs[j];\n"),
          expect=r"two __syncthreads\(\) per chunk of v"),
    Wrong('05.2', 'the write guard lets row h through',
          change=("if (lane == 0 && row < h) out[row] = acc;", "if (lane == 0 && row <= h) out[row] = acc;"),
          cpu='not checked here',
          expect=r"writes \d+ element\(s\) past the end of out"),
    Wrong('05.2', 'the chunk loop runs past the end of the row',
          change=("j < CHUNK && c0 + j < k; j += 32", "j < CHUNK; j += 32"),
          cpu='not checked here',
          expect=r"reads past the end \(or before the start\) of m"),
    Wrong('05.2', 'the wrapper does not compare the sizes',
          change=('    if v.shape[0] != k: raise ValueError(f"size mismatch: m is {h}x{k}, v has {v.shape[0]} values")\n', ''),
          cpu='not checked here',
          expect=r"matvec accepts v of 5 values for m 8x8"),
    *[Wrong('05.2', slip, change=(V_LOAD, load), expect=UNGUARDED_V) for slip, load in (
        ('no bound check on the load of v (its values past k are never used)', "vs[threadIdx.x] = v[i];"),
        ('the load of v guarded by the chunk size, not by k', "vs[threadIdx.x] = threadIdx.x < CHUNK ? v[i] : 0.0f;"),
        ('the load of v guarded by h, not k', "vs[threadIdx.x] = i < h ? v[i] : 0.0f;"),
        ("the load of v guarded by the chunk's start (c0 < k), not the element's index", "vs[threadIdx.x] = c0 < k ? v[i] : 0.0f;"))],
    Wrong('05.2', "the wrapper checks m's device only",
          change=(DEVICE_CHECK, '        if name == "m" and not t.is_cuda: raise ValueError(f"{name} must be a CUDA tensor")\n'),
          expect=V_ON_THE_CPU),
    Wrong('05.2', "the wrapper checks m.is_cuda on its own, and v's device nowhere",
          body=changed('05.2', (DEVICE_CHECK, ''), (SIZES, "    if not m.is_cuda: raise ValueError('m must be a CUDA tensor')\n" + SIZES)),
          expect=V_ON_THE_CPU),
    Wrong('05.2', 'the wrapper moves v to the GPU instead of refusing it',
          body=changed('05.2', (DEVICE_CHECK, '        if name == "m" and not t.is_cuda: raise ValueError("m must be a CUDA tensor")\n'),
                       (SIZES, "    v = v.to(m.device)\n" + SIZES)),
          expect=V_ON_THE_CPU),
    Wrong('05.2', 'each lane reads its own run of 8 elements of the row',
          change=(ROW_LOOP, "for (int j = lane * (CHUNK / 32); j < (lane + 1) * (CHUNK / 32) && c0 + j < k; ++j) "
                            "acc += m[(size_t)row*k + c0 + j] * vs[j];"),
          expect=uncoalesced(32)),
    Wrong('05.2', 'each lane reads its own run, counted by a loop over t',
          change=(ROW_LOOP, "for (int t = 0; t < CHUNK / 32; ++t) { int j = lane * (CHUNK / 32) + t; "
                            "if (c0 + j < k) acc += m[(size_t)row*k + c0 + j] * vs[j]; }"),
          expect=uncoalesced(32)),
    Wrong('05.2', 'each lane reads 4 neighbours, then the warp moves on by 128',
          change=(ROW_LOOP, "for (int j0 = lane * 4; j0 < CHUNK; j0 += 128) for (int j = j0; j < j0 + 4 && c0 + j < k; ++j) "
                            "acc += m[(size_t)row*k + c0 + j] * vs[j];"),
          expect=uncoalesced(16)),
    Wrong('05.2', 'the row loop never advances (its step j + 32 thrown away)',
          change=("j < CHUNK && c0 + j < k; j += 32)", "j < CHUNK && c0 + j < k; j + 32)"),
          expect=endless_loop('05.2', 'for (int j = lane; j < CHUNK && c0 + j < k; j + 32)',
                              r"its step `j \+ 32` computes a value and throws it away")),
]

# Right answers written unusually: each must not be 'not yet'.
RIGHT = [
    Wrong('05.2', 'the load of v clamped to k - 1, and zeroed past k', change=(V_LOAD, "vs[threadIdx.x] = v[min(i, k - 1)] * (i < k);"), expect=''),
    Wrong('05.2', 'the load of v guarded by an if/else', change=(V_LOAD, "if (i < k) vs[threadIdx.x] = v[i]; else vs[threadIdx.x] = 0.0f;"),
          expect=''),
    Wrong('05.2', 'a whole chunk of v loaded unguarded only where it lies inside v',
          change=(V_LOAD, "if (c0 + CHUNK <= k) vs[threadIdx.x] = v[i]; else vs[threadIdx.x] = i < k ? v[i] : 0.0f;"), expect=''),
    Wrong('05.2', 'the chunk of v loaded by a loop over the block', expect='',
          change=(V_LOAD, "for (int t = threadIdx.x; t < CHUNK; t += blockDim.x) vs[t] = c0 + t < k ? v[c0 + t] : 0.0f;")),
    Wrong('05.2', 'the lane and the warp by bit operations', expect='',
          change=("int lane = threadIdx.x % 32, row = blockIdx.x*ROWS + threadIdx.x / 32;",
                  "int lane = threadIdx.x & 31, row = blockIdx.x*ROWS + (threadIdx.x >> 5);")),
    Wrong('05.2', "a pointer to the row's chunk", expect='',
          change=(ROW_LOOP, "{ const float* chunk = m + (size_t)row*k + c0; "
                            "for (int j = lane; j < CHUNK && c0 + j < k; j += 32) acc += chunk[j] * vs[j]; }")),
    Wrong('05.2', "the devices compared: m on a GPU, v on m's device", expect='',
          body=changed('05.2', (DEVICE_CHECK, ''),
                       (SIZES, "    if not m.is_cuda or v.device != m.device: raise ValueError('m and v must be on one GPU')\n" + SIZES))),
    Wrong('05.1', 'the loop over the tiles advanced at the end of its body, not in its step', expect='',
          body=changed('05.1', ("for (int idx = 0; idx < k; idx += tw) {", "for (int idx = 0; idx < k;) {"),
                       ("ns[i*tw + tc];\n        __syncthreads();\n", "ns[i*tw + tc];\n        __syncthreads();\n        idx += tw;\n"))),
]

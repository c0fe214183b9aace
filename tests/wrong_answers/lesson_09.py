"Wrong answers for notebook 09's exercises (Numba's performance: a lean kernel, a timer)."
from . import Wrong
from .lesson_07 import changed
from .lesson_08 import endless

INNER_LOOP = ("            p += shar[tr*tw + i] * shar[tw*tw + i*tw + tc]\n"
              "            i += U(1)\n")

# 09.2: the default of sync in the reference solution, and the sentences for a timer that does not wait for a GPU
DEFAULT_SYNC = "sync=torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)"
TIMED_SYNC = "        sync()                                     # a launch returns at once: wait for the work it queued\n"
WARM_UP_SYNC = "    for _ in range(warmup): fn(*args)             # the first calls compile and warm caches: not timed\n    sync()\n"
DEFAULT_NEVER_WAITS = r"time_ms's default sync, `{}`, does not wait for the GPU: called as time_ms\(fn, \*args\) on a GPU"
DEFAULT_DOES_NOT_WAIT_ON_A_GPU = (r"time_ms says [\d.]+ ms for one kernel that spins on the GPU for [\d.]+ ms \(CUDA events\), with its "
                                  r"default sync \(.*\): the timer does not wait for the GPU")

WRONG = [
    # 09.1: a Numba kernel without Python's index fix-ups
    Wrong('09.1', 'the thread indices left signed',
          change=("tr, tc = U(cuda.threadIdx.y), U(cuda.threadIdx.x)", "tr, tc = cuda.threadIdx.y, cuda.threadIdx.x"),
          expect=r"line \d+ of the `#\| exercise 09\.1` cell: `tr, tc = cuda\.threadIdx\.y, cuda\.threadIdx\.x`: "
                 r"`cuda\.threadIdx\.y` is a signed 64-bit integer in Numba"),
    Wrong('09.1', 'the sizes left signed',
          change=("h, k, w = U(m.shape[0]), U(m.shape[1]), U(n.shape[1])", "h, k, w = m.shape[0], m.shape[1], n.shape[1]"),
          expect=r"`m\.shape` holds signed 64-bit integers in Numba, so every index computed from it gets Python's fix-up"),
    Wrong('09.1', 'tw left signed',
          change=("    tw = U(tw)\n", ""),
          expect=r"the argument `tw` is a signed 64-bit integer in Numba, so every index computed from it gets Python's fix-up"),
    Wrong('09.1', 'the inner loop left a for range loop',
          change=("        i = U(0)\n        while i < tw:\n" + INNER_LOOP, "        for i in range(tw):\n            p += shar[tr*tw + i] * shar[tw*tw + i*tw + tc]\n"),
          expect=r"line \d+ of the `#\| exercise 09\.1` cell: `for i in range\(tw\):` is still a `for` loop: Numba runs it with a range object"),
    Wrong('09.1', 'the counter started at a plain 0',
          change=("        i = U(0)\n", "        i = 0\n"),
          expect=r"`i = 0`: the counter `i` starts as a plain 0, which Numba types as a signed 64-bit integer"),
    Wrong('09.1', 'the counter advanced by a plain 1',
          change=("            i += U(1)\n", "            i += 1\n"),
          expect=r"`i \+= 1`: the counter `i` is advanced by a plain 1.*the counter turns signed again"),
    Wrong('09.1', 'the counter advanced by i = i + 1',
          change=("            i += U(1)\n", "            i = i + 1\n"),
          expect=r"`i = i \+ 1`: the counter `i` is advanced by a plain 1.*the counter turns signed again"),
    Wrong('09.1', 'the sum started as a plain 0.0, a float64 (only the PTX shows it)',
          change=("    p = numba.float32(0.0)\n", "    p = 0.0\n"),
          expect=r"the PTX Numba compiles for sm_90 .* has no float32 multiply-add \(fma\.rn\.f32\): its sums are float64.*"
                 r"A plain 0\.0 is a float64 in Numba",
          gpu_expect=r"the PTX Numba compiles for this GPU has no float32 multiply-add \(fma\.rn\.f32\): its sums are float64"),
    Wrong('09.1', 'the inner while loop never advances (an endless loop)',
          change=("        while i < tw:\n" + INNER_LOOP, "        while i < tw: p += shar[tr*tw + i] * shar[tw*tw + i*tw + tc]\n"),
          expect=endless('09.1', 'while i < tw: p += shar[tr*tw + i] * shar[tw*tw + i*tw + tc]')),
    Wrong('09.1', 'the barrier after the products missing',
          change=("        cuda.syncthreads()\n        idx += tw", "        idx += tw"),
          expect=r"lean_dynamic_kernel \(the `#\| exercise 09\.1` cell\): no barrier between reading shared memory "
                 r"\(line \d+\) and the next pass of the loop filling it again"),
    Wrong('09.1', 'two barriers side by side, none after the products',
          change=("        cuda.syncthreads()\n        i = U(0)\n        while i < tw:\n" + INNER_LOOP + "        cuda.syncthreads()\n",
                  "        cuda.syncthreads()\n        cuda.syncthreads()\n        i = U(0)\n        while i < tw:\n" + INNER_LOOP),
          expect=r"lean_dynamic_kernel \(the `#\| exercise 09\.1` cell\): no barrier between reading shared memory "
                 r"\(line \d+\) and the next pass of the loop filling it again"),
    Wrong('09.1', 'a barrier inside an if',
          change=("        cuda.syncthreads()\n        idx += tw", "        if c < w: cuda.syncthreads()\n        idx += tw"),
          expect=r"lean_dynamic_kernel \(the `#\| exercise 09\.1` cell\): the barrier at line \d+ is inside the `if` of line \d+"),
    Wrong('09.1', 'r <= h in the guard of the load of m',
          change=("m[r, idx + tc] if r < h and", "m[r, idx + tc] if r <= h and"),
          expect=r"reads m\[5, \d+\], outside m \(shape 5 x 7\) at line \d+ of the `#\| exercise 09\.1` cell: .*a bound check "
                 r"is missing or wrong"),

    # 09.2: a timer you can trust
    Wrong('09.2', 'no warm-up',
          change=("    for _ in range(warmup): fn(*args)             # the first calls compile and warm caches: not timed\n", ""),
          expect=r"time_ms times the first call of fn, which pays for compiling.*no untimed warm-up"),
    Wrong('09.2', 'the mean instead of the median',
          change=("return statistics.median(times)", "return statistics.mean(times)"),
          expect=r"time_ms returned \d+\.?\d* for calls whose median was \d+\.\d+ ms: that is their mean"),
    Wrong('09.2', 'no sync before reading the clock',
          change=("        sync()                                     # a launch returns at once: wait for the work it queued\n", ""),
          expect=r"time_ms reads the clock after fn returns but before sync\(\): fn only queues its work"),
    Wrong('09.2', 'sync before the call, not after it',
          change=("        start = time.perf_counter()\n        fn(*args)\n        sync()",
                  "        sync()\n        start = time.perf_counter()\n        fn(*args)"),
          expect=r"time_ms reads the clock after fn returns but before sync\(\)"),
    Wrong('09.2', 'all reps timed together, one sync at the end',
          body=("import statistics, time, torch\n"
                "def time_ms(fn, *args, sync=lambda: None, warmup=3, reps=21):\n"
                "    for _ in range(warmup): fn(*args)\n"
                "    sync()\n"
                "    start = time.perf_counter()\n"
                "    for _ in range(reps): fn(*args)\n"
                "    sync()\n"
                "    return (time.perf_counter() - start) * 1000 / reps\n"),
          expect=r"time_ms times 21 calls of fn between two readings of the clock, which gives their mean"),
    Wrong('09.2', 'too few reps',
          change=("warmup=3, reps=21):", "warmup=3, reps=3):"),
          expect=r"time_ms times fn 3 time\(s\): so few calls are noise, where the check asks for the median of at least 5"),
    Wrong('09.2', 'seconds instead of milliseconds',
          change=("times.append((time.perf_counter() - start) * 1000)", "times.append(time.perf_counter() - start)"),
          expect=r"time_ms returned 0\.00\d+ for calls whose median was \d+\.\d+ ms: that is seconds"),
    Wrong('09.2', 'a while loop over the reps that never advances (an endless loop)',
          change=("    for _ in range(reps):\n        start = time.perf_counter()\n        fn(*args)\n        sync()                                     # a launch returns at once: wait for the work it queued\n        times.append((time.perf_counter() - start) * 1000)\n",
                  "    rep = 0\n    while rep < reps:\n        start = time.perf_counter()\n        fn(*args)\n        sync()\n        times.append((time.perf_counter() - start) * 1000)\n"),
          expect=r"(?=.*was still running after \d+ s)(?=.*`while rep < reps:`)(?=.*line \d+ of the `#\| exercise 09\.2` cell)"),
    Wrong('09.2', 'the default sync never waits (the CPU fallback made the only default)',
          change=(DEFAULT_SYNC, "sync=lambda: None"),
          expect=DEFAULT_NEVER_WAITS.format('lambda: None')),
    Wrong('09.2', 'the default sync None, and sync() called only when given',
          body=changed('09.2', (DEFAULT_SYNC, "sync=None"), (WARM_UP_SYNC, WARM_UP_SYNC.replace("    sync()", "    if sync: sync()")),
                       (TIMED_SYNC, "        if sync: sync()\n")),
          expect=DEFAULT_NEVER_WAITS.format('None')),
    Wrong("09.2", "the default sync polls the stream (query) instead of waiting for it",
          change=(DEFAULT_SYNC, "sync=torch.cuda.current_stream().query if torch.cuda.is_available() else (lambda: None)"),
          cpu='not checked here', expect=DEFAULT_DOES_NOT_WAIT_ON_A_GPU),
    Wrong("09.2", "the default sync waits for a new stream, which holds none of fn's work",
          change=(DEFAULT_SYNC, "sync=torch.cuda.Stream().synchronize if torch.cuda.is_available() else (lambda: None)"),
          cpu='not checked here', expect=DEFAULT_DOES_NOT_WAIT_ON_A_GPU),
]

# Right answers written unusually: each must not be 'not yet'.
RIGHT = [
    Wrong('09.2', 'sync a required argument (no default)', change=(DEFAULT_SYNC, "sync"), expect=''),
    Wrong('09.2', 'sync=None, replaced by torch.cuda.synchronize on a GPU', expect='',
          body=changed('09.2', (DEFAULT_SYNC, "sync=None"),
                       (WARM_UP_SYNC, "    sync = sync or (torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None))\n" + WARM_UP_SYNC))),
    Wrong('09.2', 'the default sync a name of the module', expect='',
          body=changed('09.2', (DEFAULT_SYNC, "sync=WAIT"),
                       ("def time_ms(", "WAIT = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)\n\n\ndef time_ms("))),
]

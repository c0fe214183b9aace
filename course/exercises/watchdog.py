"""Stopping learner code that runs too long (a loop that never ends), with a sentence that names the
thread, the line and the loop, and with no thread left running afterwards.

`with Watchdog(15, what=...):` around a call of the learner's code: if it has not returned after 15 s,
the watchdog looks at every thread that is inside the learner's cells, names the stuck one, and raises
`KernelTimeout` inside each of them (asynchronously, as Ctrl-C would), until none is left in the
learner's code. Barriers the runners registered with `on_stop` are broken, so no thread waits forever.
Leaving the `with` then raises `KernelTimeout` with the sentence."""
import ast, ctypes, linecache, sys, threading, time
from pathlib import Path

from ..checked_simulator import KernelFault
from .learner_code import LEARNER_FILES, where

ACTIVE = []   # the watchdogs now running (innermost last), so the runners can register what to break


class KernelTimeout(KernelFault):
    "The learner's code ran past its time budget and was stopped."


def thread_name(thread):
    "A CUDA name for a Python thread that runs a simulated CUDA thread ('thread (x=1, y=0) of block (x=0, y=0)')."
    name = getattr(thread, 'cuda_name', None)
    if name: return name
    b, t = getattr(thread, 'blockIdx', None), getattr(thread, 'threadIdx', None)   # Numba's simulator threads
    if b is not None and t is not None: return f"thread (x={t.x}, y={t.y}) of block (x={b.x}, y={b.y})"
    return "your code"


def innermost_learner_frame(frame):
    while frame is not None:
        if frame.f_code.co_filename in LEARNER_FILES: return frame
        frame = frame.f_back
    return None


def enclosing_loop(filename, lineno):
    "(line, header text) of the innermost for/while loop around line `lineno` of a learner cell, or None."
    src = ''.join(linecache.getlines(filename))
    try: tree = ast.parse(src)
    except SyntaxError: return None
    loops = [n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))
             and n.lineno <= lineno <= (n.end_lineno or n.lineno)]
    if not loops: return None
    whiles = [l for l in loops if isinstance(l, ast.While)]     # a `for ... in range` ends; a while loop may not
    best = max(whiles or loops, key=lambda l: l.lineno)
    return best.lineno, linecache.getline(filename, best.lineno).strip()


COURSE_DIR = str(Path(__file__).parents[1])      # the course package's folder, as its frames name it


def interruptible(ident):
    """Whether the thread now runs the learner's code, the course's or threading's (a barrier's wait): not a
    callback of someone else's that happens to run on it (a garbage collector's hook of pytest, say), which would
    swallow the exception and leave the loop running."""
    frame = sys._current_frames().get(ident)
    if frame is None: return False
    name = frame.f_code.co_filename
    return (name in LEARNER_FILES or name.startswith(COURSE_DIR) or name.endswith('threading.py')
            or '/numba/' in name)                                # Numba's simulator, running the learner's kernel


def raise_in(ident, exc_type):
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc_type))


class Watchdog:
    def __init__(self, seconds, what="the kernel"):
        self.seconds, self.what = seconds, what
        self.sentence, self.stoppers = None, []
        self.done = threading.Event()

    def on_stop(self, fn):
        "Call fn() when the time is up (to break a barrier that stuck threads wait at)."
        self.stoppers.append(fn)

    def __enter__(self):
        ACTIVE.append(self)
        self.thread = threading.Thread(target=self._watch, daemon=True, name='course-watchdog')
        self.thread.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.done.set()
        self.thread.join()
        ACTIVE.remove(self)
        if self.sentence is not None: raise KernelTimeout(self.sentence) from None
        return False

    def _stuck(self, with_waiting=False):
        """{thread ident: innermost learner frame} of every other thread now inside the learner's code (with
        with_waiting: {ident: (frame, whether the thread waits at a barrier or lock)})."""
        me = threading.get_ident()
        out = {}
        for ident, frame in sys._current_frames().items():
            f = innermost_learner_frame(frame) if ident != me else None
            if f is None: continue
            waiting = frame.f_code.co_name in ('wait', '_wait', 'syncthreads', 'acquire') or \
                frame.f_code.co_filename.endswith('threading.py')
            out[ident] = (f, waiting) if with_waiting else f
        return out

    def _stuck_sampled(self, samples=5, gap=0.02):
        """_stuck(with_waiting=True) over a few snapshots `gap` s apart: a thread counts as waiting only if it
        waited in every snapshot it was seen in, so that a running thread caught for an instant inside a lock of
        the simulator is not taken for one waiting at a barrier (and the same thread is named on every run)."""
        merged = {}
        for n in range(samples):
            if n: time.sleep(gap)
            for ident, (frame, waiting) in self._stuck(with_waiting=True).items():
                first_frame, waited = merged.get(ident, (frame, True))
                merged[ident] = (frame if not waiting else first_frame, waited and waiting)
        return merged

    def _watch(self):
        if self.done.wait(self.seconds): return
        self.sentence = self.describe(self._stuck_sampled())
        stuck = self._stuck()
        for stop in self.stoppers:
            try: stop()
            except Exception: pass
        deadline = time.monotonic() + 10
        while stuck and time.monotonic() < deadline and not self.done.is_set():
            for ident in stuck:
                if interruptible(ident): raise_in(ident, KernelTimeout)
            self.done.wait(0.05)
            stuck = self._stuck()

    def describe(self, stuck):
        threads = {t.ident: t for t in threading.enumerate()}
        if not stuck:
            return f"{self.what} was still running after {self.seconds:.0f} s and was stopped"
        # A thread that is running (not waiting at a barrier) is the one to name.
        running = [i for i, (_, waiting) in stuck.items() if not waiting] or list(stuck)
        ident = min(running, key=lambda i: thread_name(threads.get(i)))     # the same thread named on every run
        f = stuck[ident][0]
        who = thread_name(threads.get(ident))
        filename, line = f.f_code.co_filename, f.f_lineno
        loop = enclosing_loop(filename, line)
        if loop is None:
            place = f"at {where(filename, line)}"
        else:
            place = f"in the loop `{loop[1]}` at line {loop[0]} of {LEARNER_FILES.get(filename, filename)}"
            if line != loop[0]: place += f" (last seen at line {line}: `{linecache.getline(filename, line).strip()}`)"
        return (f"{who} was still running after {self.seconds:.0f} s, {place}: a loop that never ends? Check that "
                "every pass moves it towards its end (in a while loop, that its variable is advanced). It was stopped, and no thread of it is left running")

"""Running a check in a child process, where the learner's code runs on the GPU.

A CUDA kernel that reads or writes outside its buffers can leave the process's CUDA context unusable
(every later CUDA call fails), and a kernel that never ends never gives the process back. So on a GPU
machine the checks of GPU exercises run in a fresh Python process: it rebuilds the learner's cells, runs
the whole check there (correctness, compute-sanitizer, speed) and sends the report back. If the child
dies or stops printing for too long, the sentence says what happened, and the learner's notebook (the
parent) never touched the faulty kernel: its CUDA context still works."""
import json, os, re, signal, subprocess, sys, threading, time

from .learner_code import ROOT
from .verdict import Report

CHILD_ENV = 'COURSE_EXERCISE_CHILD'
REPORT_MARK = '@@course-report@@ '
PROGRESS_MARK = '@@course-progress@@ '
# Seconds the child may go without saying anything (it says something after each step of a check).
SILENCE_S = int(os.environ.get('COURSE_CHECK_SILENCE_S', 240))
# Seconds a step that runs the learner's kernel may take (the lecture's problem takes milliseconds).
KERNEL_STEP_S = int(os.environ.get('COURSE_CHECK_KERNEL_S', 60))


def in_child(): return os.environ.get(CHILD_ENV) == '1'


def check_in_child(exercise, work):
    "Run exercise's check on `work` in a child process; return its Report (a failure sentence if the child died)."
    env = dict(os.environ, **{CHILD_ENV: '1', 'PYTHONUNBUFFERED': '1'})
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH', '')]))
    proc = subprocess.Popen([sys.executable, '-m', 'course.exercises.child'], cwd=ROOT, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    proc.stdin.write(json.dumps(dict(exercise_id=exercise.id, work=work.as_dict())))
    proc.stdin.close()
    stderr = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
    lines, last, step, limit = [], [time.monotonic()], ['starting'], [SILENCE_S]

    def read():
        for line in proc.stdout:
            last[0] = time.monotonic()
            if line.startswith(PROGRESS_MARK):
                seconds, _, step[0] = line[len(PROGRESS_MARK):].strip().partition(' ')
                limit[0] = int(seconds)
            lines.append(line)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    silent = False
    try:
        while reader.is_alive():
            reader.join(0.2)
            if time.monotonic() - last[0] > limit[0]:
                silent = True
                break
    except BaseException:      # Ctrl-C in the notebook: stop the child with its GPU work, then pass it on
        kill(proc)
        raise
    if silent: kill(proc)
    code = proc.wait()
    report = next((Report.from_dict(json.loads(l[len(REPORT_MARK):]), work) for l in lines if l.startswith(REPORT_MARK)), None)
    if report is not None: return report
    report = Report(exercise.id, exercise.title, work)
    report.failure = death_sentence(code, ''.join(stderr), step[0], silent and limit[0])
    return report


def kill(proc):
    try: os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError): proc.kill()
    proc.wait()


def death_sentence(code, stderr, step, silent):
    "Why the child gave no report, in one sentence."
    safe = "It ran in a separate process, so this notebook's GPU context is unharmed."
    if silent:
        return (f"while {step}, the check heard nothing from your code for {silent} s and stopped it: a kernel "
                "that never ends (a loop whose condition never changes, or threads waiting at a barrier others never "
                f"reach)? {safe}")
    cuda = re.search(r'(an illegal memory access was encountered|misaligned address|unspecified launch failure|'
                     r'illegal instruction|CUDA_ERROR_\w+|cudaError\w*)', stderr)
    if cuda:
        return (f"while {step}, your kernel crashed the GPU context ({cuda.group(1)}): it most likely read or wrote "
                "outside a buffer. Check its bound checks (compute-sanitizer's memcheck names the line: run the cell "
                f"under `compute-sanitizer python ...`). {safe}")
    tail = [l for l in stderr.strip().splitlines() if l.strip()][-1:] or ['no message']
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    return f"while {step}, the check's process {how} ({tail[0].strip()[:300]}). {safe}"


def progress(step, limit_s=SILENCE_S):
    """In the child: say which step of the check runs now, and how many seconds it may take before the
    parent stops it (the parent names the step if the child dies)."""
    if in_child(): print(f"{PROGRESS_MARK}{int(limit_s)} {step}", flush=True)

#!/usr/bin/env python3
"""Recording overhead side by side: plain, gcprof record,
torch.profiler(profile_memory=True) and heaptrack on the same jobs.

    python3 bench/record/side_by_side.py [--build build] [--rounds 5] [--steps N]
                                         [--jobs py-gpt,vit,gpt2,resnet18] [--raw FILE]
                                         [--modes plain,gcprof,plain-again,...] [--short]
                                         [--shim NAME=DIR ...]

Each step's CPU time is taken from outside, without touching the job: every
job prints `step <i> ...` once per step, and at each such line the harness
reads the CPU time of the job's whole process tree (every thread of every
descendant, from /proc/<pid>/task/<tid>/schedstat, in ns). So the writer
thread of gcprof and heaptrack's separate interpreter process are counted.

In a round the modes of one job run side by side, taking turns step by step
(run_lockstep): all four processes are alive, one runs one step while the
others are stopped. The k-th steps of the four modes therefore run within a
second or two of each other, and a round's ratio is the median over windows
of 16 steps of mode / plain summed over the same steps (paired_ratio). Runs
one after another (before: one whole run per mode) let the machine's load
drift between the runs being compared: on a quiet machine one job's ratio
spread 0.83-1.27 from round to round with 3 rounds x 10 steps, on a loaded one
0.96-1.28 with 30 steps; side by side, at load 8, 1.09-1.12 (bench/RESULTS.md).
The first --warmup steps of a run are dropped; the overall ratio is the median
of the rounds' ratios, with a 90% bootstrap interval over rounds. Wall time is
not reported: a stopped job's clock runs on.

Jobs run with one intra-op thread (job.py; OMP_NUM_THREADS=1 for LibTorch):
the development machine has 2 cores shared by several engineers.

Prints Markdown tables (paste them into bench/RESULTS.md).
"""
import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JOB = os.path.join(ROOT, "bench", "record", "job.py")
PUBLIC = os.path.join(ROOT, "samples", "python", "train_public.py")
GPT = os.path.join(ROOT, "samples", "python", "train_gpt.py")

# name -> (python script and args, or None for the C++ sample)
JOBS = {
    "cpp-gpt": None,
    "py-gpt": [GPT, "--layers", "4", "--hidden", "128", "--heads", "4", "--batch", "8"],
    # Short steps (a few ms): the cost per module call dominates, as on a GPU
    # whose small models are launch-bound.
    "py-gpt-short": [GPT, "--layers", "8", "--hidden", "64", "--heads", "4", "--seq", "32",
                     "--batch", "2"],
    "resnet18": [PUBLIC, "--model", "resnet18", "--image", "224", "--batch", "4"],
    "resnet50": [PUBLIC, "--model", "resnet50", "--image", "224", "--batch", "2"],
    "vit": [PUBLIC, "--model", "vit", "--layers", "4", "--image", "224", "--batch", "4",
            "--hidden", "128"],
    "gpt2": [PUBLIC, "--model", "gpt2", "--layers", "4", "--hidden", "128", "--seq", "256",
             "--batch", "8"],
}
CPP_ARGS = ["--layers", "4", "--hidden", "128", "--heads", "4", "--batch", "8"]
MODES = ("plain", "gcprof", "torch.profiler", "heaptrack")
# Diagnostics, not run by default: `gcprof record` without the python shim (the
# job's PYTHONPATH cleared, so sitecustomize is not found): allocations only,
# no module ranges, so gcprof - gcprof-alloc-only is what the shim costs;
# `gcprof-python-hooks`: gcprof record with the backward ranges on the python
# path (GCPROF_NATIVE_HOOKS=0) instead of the C++ hooks (profiler/backward_hooks);
# `gcprof-python-forward`: C++ backward hooks, python forward hooks
# (GCPROF_NATIVE_FORWARD=0: what the shim did before forward_hooks.cpp);
# and `plain-again`, a second plain process, the control: it must read 1.00 of
# plain, else the harness itself favours a place in the turns.
EXTRA_MODES = ("gcprof-alloc-only", "gcprof-python-hooks", "gcprof-python-forward", "plain-again")
# `--shim NAME=DIR` adds the mode `gcprof@NAME`: gcprof record of this build
# with the python shim in DIR instead (another version's profiler/python, e.g.
# `git archive main profiler/python | tar -x -C /tmp/before`), so that two
# versions of the shim take turns in the same rounds. The C++ hooks are this
# build's for both. When DIR is a build folder instead (holding bin/gcprof,
# e.g. another checkout's build/), gcprof@NAME is that build's `gcprof
# record` as a whole: its injector, its C++ hooks and its shim.


def tree_tasks(pid, with_root=True):
    """/proc/<p>/task/<tid> of every live thread of pid and its descendants
    (without pid's own threads when not with_root); a process that ends while
    being walked is skipped."""
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            task = f"/proc/{p}/task/{tid}"
            try:
                with open(f"{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
            except (OSError, ValueError):
                continue
            if with_root or p != pid:
                yield task


def tree_threads(pid, with_root=True):
    """(thread name, CPU ns) of every live thread of pid and its descendants
    (without pid's own threads when not with_root), from the task's comm and
    schedstat; threads that end while being read are skipped."""
    for task in tree_tasks(pid, with_root):
        try:
            with open(f"{task}/comm") as f:
                name = f.read().strip()
            with open(f"{task}/schedstat") as f:
                ns = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        yield name, ns


def tree_cpu_ns(pid):
    """CPU ns of every live thread of pid and its descendants."""
    return sum(ns for _, ns in tree_threads(pid))


def settled_cpu_ns(pid, tries=50):
    """tree_cpu_ns once the tree has stopped (SIGSTOP takes effect thread by
    thread, after the signal is sent): read until two readings agree."""
    last = tree_cpu_ns(pid)
    for _ in range(tries):
        time.sleep(0.001)
        now = tree_cpu_ns(pid)
        if now == last:
            return now
        last = now
    return last


def turn_orders(n):
    """Orders of n modes for successive turns, each mode run right after every
    other one equally often (a Williams design): what runs just before a step
    leaves the caches warm or cold for it (the same libraries' code, or
    another profiler's big working set), and a plain rotation keeps every
    mode's predecessor fixed: plain always ran after heaptrack and gcprof
    right after plain, and gcprof read 0.96-0.97 of plain (bench/RESULTS.md)."""
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(m + r) % n for m in first] for r in range(n)]
    if n % 2:
        rows += [list(reversed(row)) for row in rows]
    return rows


class Job:
    """One running job of a round, in its own process group so that it can be
    stopped and continued as a whole (gcprof's CLI and the job, heaptrack's
    script, the job and its interpreter)."""

    def __init__(self, argv, cwd):
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        self.argv = argv
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True,
                                     start_new_session=True)
        self.marks = []  # (clock, tree CPU ns) at each `step` line

    def signal(self, sig):
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def next_step(self):
        """Lets the job run until it prints its next `step` line, then stops it."""
        self.signal(signal.SIGCONT)
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{' '.join(self.argv)}: ended after {len(self.marks)} steps "
                                   f"(exit {self.proc.wait()})")
            if line.startswith("step "):
                # Stopped first, then read: the job's CPU no longer moves, and
                # the harness's own reading of /proc (longer for a tree of
                # more threads) falls between two of its steps, in none.
                self.signal(signal.SIGSTOP)
                self.marks.append((time.monotonic(), settled_cpu_ns(self.proc.pid)))
                return

    def finish(self, steps, warmup):
        """([wall s], [CPU s]) of each step after the warm-up (wall includes the
        time the job was stopped while the others ran: only CPU is comparable)."""
        self.signal(signal.SIGCONT)
        self.proc.stdout.read()
        if self.proc.wait() != 0 or len(self.marks) < steps:
            raise RuntimeError(f"{' '.join(self.argv)}: exit {self.proc.returncode}, "
                               f"{len(self.marks)} of {steps} steps")
        marks = self.marks[warmup:]
        walls = [b[0] - a[0] for a, b in zip(marks, marks[1:])]
        cpus = [(b[1] - a[1]) / 1e9 for a, b in zip(marks, marks[1:])]
        return walls, cpus

    def kill(self):
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        self.proc.wait()


def run_lockstep(argvs, cwd, steps, warmup, log):
    """Runs the modes of one job side by side, taking turns step by step.

    Every mode's process is alive at once but only one runs: it is continued,
    runs to the end of its next step and is stopped again (SIGSTOP on its
    process group), then the next mode takes its turn, in an order that changes
    from step to step so that every mode follows every other equally often
    (turn_orders). The k-th steps of all modes thus run within about a
    second of each other and see the same machine: a neighbour's burst of load
    inflates them alike instead of one whole run. Start-ups run one at a time,
    before the first turn. Returns {mode: ([wall s], [CPU s])} per step after
    warm-up.
    """
    jobs = {}
    try:
        for mode, argv in argvs.items():
            jobs[mode] = Job(argv, cwd)
            jobs[mode].next_step()  # start-up and step 0, alone
        modes = list(argvs)
        orders = turn_orders(len(modes))
        for k in range(1, steps):
            for i in orders[k % len(orders)]:
                jobs[modes[i]].next_step()
            log(k)
        return {mode: job.finish(steps, warmup) for mode, job in jobs.items()}
    except BaseException:
        for job in jobs.values():
            job.kill()
        raise


def command(job, mode, build, steps, tmp, n, shims=None):
    script = JOBS[job]
    if script is None:
        if mode == "torch.profiler":
            return None
        base = [os.path.join(build, "bin", "gpt_train"), *CPP_ARGS, "--steps", str(steps)]
    else:
        prof = ["--torch-profiler"] if mode == "torch.profiler" else []
        base = [sys.executable, JOB, *prof, *script, "--steps", str(steps)]
    if mode.startswith("gcprof@"):
        other = shims[mode[len("gcprof@"):]]
        if os.path.isfile(os.path.join(other, "bin", "gcprof")):
            return [os.path.join(other, "bin", "gcprof"), "record", "-o",
                    os.path.join(tmp, f"{job}-{n}.db"), "--", *base]
        return [os.path.join(build, "bin", "gcprof"), "record", "-o",
                os.path.join(tmp, f"{job}-{n}.db"), "--", "env",
                "PYTHONPATH=" + shims[mode[len("gcprof@"):]], *base]
    if mode in ("gcprof", "gcprof-alloc-only", "gcprof-python-hooks", "gcprof-python-forward"):
        shim = {"gcprof": [], "gcprof-alloc-only": ["env", "PYTHONPATH="],
                "gcprof-python-hooks": ["env", "GCPROF_NATIVE_HOOKS=0"],
                "gcprof-python-forward": ["env", "GCPROF_NATIVE_FORWARD=0"]}[mode]
        return [os.path.join(build, "bin", "gcprof"), "record", "-o",
                os.path.join(tmp, f"{job}-{n}.db"), "--", *shim, *base]
    if mode == "heaptrack":
        return ["heaptrack", "-o", os.path.join(tmp, f"{job}-{n}"), *base]
    return base


# Steps per run by default: about 5 s of steps on a quiet 2-core machine (py-gpt
# 0.17 s a step, gpt2 0.31, vit 0.64, resnet18 0.79), so that a run's median is
# taken over enough steps while start-up (a few s per run) stays a fair share.
DEFAULT_STEPS = {"cpp-gpt": 24, "py-gpt": 30, "py-gpt-short": 300, "gpt2": 16, "vit": 10, "resnet18": 9, "resnet50": 8}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=0,
                    help="steps per run, warm-up included (default: per job, DEFAULT_STEPS)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--jobs", default="py-gpt,vit,gpt2,resnet18")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--raw", metavar="FILE", help="also write every step's times as JSON")
    ap.add_argument("--shim", action="append", default=[], metavar="NAME=DIR",
                    help="also run gcprof@NAME: this build's gcprof with the python shim in DIR, "
                         "or, when DIR is a build folder (DIR/bin/gcprof), that build's gcprof")
    ap.add_argument("--short", action="store_true",
                    help="one round of 6 steps of resnet18 and gpt2 (make bench)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)  # the jobs run in a temporary folder
    if a.short:
        a.rounds, a.steps, a.warmup, a.jobs = 1, 6, 2, "resnet18,gpt2"
    jobs = a.jobs.split(",")
    modes = [m for m in a.modes.split(",") if m]
    shims = {}
    for spec in a.shim:
        name, _, folder = spec.partition("=")
        if not name or not (os.path.isfile(os.path.join(folder, "sitecustomize.py")) or
                            os.path.isfile(os.path.join(folder, "bin", "gcprof"))):
            sys.exit(f"side_by_side.py: --shim {spec}: give NAME=DIR, DIR holding a sitecustomize.py "
                     f"or a build's bin/gcprof")
        shims[name] = os.path.abspath(folder)
        modes.append("gcprof@" + name)
    for m in modes:
        if m.startswith("gcprof@"):
            continue
        if m not in MODES + EXTRA_MODES:
            sys.exit(f"side_by_side.py: unknown mode {m!r} (known: {', '.join(MODES + EXTRA_MODES)})")
    for j in jobs:
        if j not in JOBS:
            sys.exit(f"side_by_side.py: unknown job {j!r} (known: {', '.join(JOBS)})")
    if "heaptrack" in modes and not shutil.which("heaptrack"):
        print("side_by_side.py: heaptrack not installed (scripts/install-deps); skipped", file=sys.stderr)
        modes.remove("heaptrack")
    if "plain" not in modes:
        modes.insert(0, "plain")
    steps = {j: a.steps or DEFAULT_STEPS[j] for j in jobs}
    for j in jobs:
        if steps[j] < a.warmup + 3:
            sys.exit(f"side_by_side.py: {j}: --steps {steps[j]} leaves fewer than 2 timed steps "
                     f"after --warmup {a.warmup}")
    tmp = tempfile.mkdtemp(prefix="gcprof-sbs-")
    # results[job][mode] = [([wall s], [cpu s]) per round]
    results = {j: {m: [] for m in modes} for j in jobs}
    n = 0
    started = time.monotonic()
    try:
        for r in range(a.rounds):
            for j in jobs:
                argvs = {}
                for m in modes:
                    argv = command(j, m, a.build, steps[j], tmp, n, shims)
                    n += 1
                    if argv is not None:
                        argvs[m] = argv

                def log(k, r=r, j=j):
                    print(f"\rround {r} {j}: step {k + 1} of {steps[j]} "
                          f"({time.monotonic() - started:.0f} s)", end="", file=sys.stderr, flush=True)
                runs = run_lockstep(argvs, tmp, steps[j], a.warmup, log)
                print(file=sys.stderr)
                for m, (w, c) in runs.items():
                    results[j][m].append((w, c))
                    print(f"round {r} {j:9} {m:15} step cpu {statistics.median(c):.3f} s  "
                          f"/ plain, in {WINDOW_STEPS}-step windows: {paired_ratio(c, runs['plain'][1]):.3f}",
                          file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump({"steps": steps, "warmup": a.warmup, "results": results}, f)
    report(results, modes, a, steps, time.monotonic() - started)


# Consecutive steps summed into one window of a round's ratio (paired_ratio).
WINDOW_STEPS = 16


def paired_ratio(cpus, plain_cpus, window=WINDOW_STEPS):
    """A round's ratio to plain (the two ran side by side, run_lockstep): the
    median over consecutive windows of `window` steps of (this mode's CPU in
    the window / plain's in the same steps).

    Windows, not single steps: a cost paid every few steps is in every
    window's sum, where a median over single steps left it out whenever it
    came on fewer than half of them. gcprof's writer commits every 200 ms, on
    about every other step of a job these turns stop, and the per-step median
    read its ~0.8 ms a step as 0.06; the fingerprints of every 8th step were
    left out alike. A window still keeps one step's hiccup from moving the
    round. Fewer steps than a window: one window of them all."""
    w = max(1, min(window, len(cpus)))
    return statistics.median(sum(cpus[i:i + w]) / sum(plain_cpus[i:i + w])
                             for i in range(0, len(cpus) - w + 1, w))


def median_ci(values, level=0.9, resamples=2000):
    """Median and a bootstrap interval for it; (median, None, None) below 3 values."""
    med = statistics.median(values)
    if len(values) < 3:
        return med, None, None
    rng = random.Random(0)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return (med, meds[int((1 - level) / 2 * resamples)],
            meds[min(resamples - 1, int((1 + level) / 2 * resamples))])


def report(results, modes, a, steps, seconds):
    per_job = ", ".join(f"{j} {steps[j]}" for j in results)
    print(f"{a.rounds} rounds; steps per run: {per_job} (first {a.warmup} dropped); modes of a "
          f"job side by side, taking turns step by step; one intra-op thread; "
          f"{seconds / 60:.0f} min; CPU = whole process tree. A round's ratio is the median over "
          f"windows of {WINDOW_STEPS} steps of (the mode's CPU in the window / plain's in the same "
          f"steps); the overall ratio is the median of the rounds' ratios, with a 90% bootstrap "
          f"interval over rounds\n")
    print("| job | mode | step CPU (s) | CPU ratio [90% CI] | CPU ratio per round |")
    print("|---|---|---:|---:|---|")
    for j, by_mode in results.items():
        plain = by_mode["plain"]
        for m in modes:
            runs = by_mode[m]
            if not runs:
                continue
            c = statistics.median(statistics.median(x[1]) for x in runs)
            ratios = [paired_ratio(x[1], p[1]) for x, p in zip(runs, plain)]
            med, lo, hi = median_ci(ratios)
            ci = f" [{lo:.3f}-{hi:.3f}]" if lo is not None else ""
            per_round = " ".join(f"{x:.3f}" for x in ratios)
            print(f"| {j} | {m} | {c:.3f} | {med:.3f}{ci} | {per_round} |")
    for j, by_mode in results.items():
        warning = control_warning(j, by_mode)
        if warning:
            print(f"\n{warning}")


# How far the control may read from 1.00 before a run's other ratios are
# not to be believed (the effects measured here are a few percent).
CONTROL_TOLERANCE = 0.01


def control_warning(job, by_mode):
    """A line saying that plain-again (a second plain process) read off 1.00
    for this job, or None: the machine or the harness moved the ratios by
    more than CONTROL_TOLERANCE."""
    again = by_mode.get("plain-again")
    if not again:
        return None
    ratio = statistics.median(paired_ratio(x[1], p[1]) for x, p in zip(again, by_mode["plain"]))
    if abs(ratio - 1) <= CONTROL_TOLERANCE:
        return None
    return (f"**{job}: the control plain-again reads {ratio:.3f} of plain (more than "
            f"{CONTROL_TOLERANCE:.0%} off 1.00): this job's ratios are noise at that size; "
            f"rerun on a quieter machine or with more rounds.**")


if __name__ == "__main__":
    main()

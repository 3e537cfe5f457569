#!/usr/bin/env python3
"""Recording overhead side by side: plain, gcprof record,
torch.profiler(profile_memory=True) and heaptrack on the same jobs, in
alternating rounds (issue 14).

    python3 bench/record/side_by_side.py [--build build] [--rounds 3] [--steps 8]
                                         [--jobs resnet18,gpt2] [--short]

Each run's step times are taken from outside, without touching the job: every
job prints `step <i> ...` once per step, and at each such line the harness
reads the clock and the CPU time of the job's whole process tree (every thread
of every descendant, from /proc/<pid>/task/<tid>/schedstat, in ns). So the
writer thread of gcprof and heaptrack's separate interpreter process are
counted, and a neighbour's load does not inflate CPU time the way it inflates
wall time. The first --warmup steps of a run are dropped; a run's figure is
the median of its remaining steps; ratios are per round (mode / plain of the
same round) and overall (median of the run figures of a mode / those of plain).
Rounds rotate the order of the modes so that a drift of the machine's load
does not favour one.

Jobs run with one intra-op thread (job.py; OMP_NUM_THREADS=1 for LibTorch):
the development machine has 2 cores shared by several engineers.

Prints Markdown tables (paste them into bench/RESULTS.md).
"""
import argparse
import os
import shutil
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
    "resnet18": [PUBLIC, "--model", "resnet18", "--image", "224", "--batch", "4"],
    "resnet50": [PUBLIC, "--model", "resnet50", "--image", "224", "--batch", "2"],
    "vit": [PUBLIC, "--model", "vit", "--layers", "4", "--image", "224", "--batch", "4",
            "--hidden", "128"],
    "gpt2": [PUBLIC, "--model", "gpt2", "--layers", "4", "--hidden", "128", "--seq", "256",
             "--batch", "8"],
}
CPP_ARGS = ["--layers", "4", "--hidden", "128", "--heads", "4", "--batch", "8"]
MODES = ("plain", "gcprof", "torch.profiler", "heaptrack")


def tree_cpu_ns(pid):
    """CPU ns of every live thread of pid and its descendants."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
            except (OSError, ValueError, IndexError):
                pass
    return total


def run_once(argv, cwd, steps, warmup):
    """(median wall s, median CPU s) per step after warm-up."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    marks = []
    for line in proc.stdout:
        if line.startswith("step "):
            marks.append((time.monotonic(), tree_cpu_ns(proc.pid)))
    if proc.wait() != 0 or len(marks) < steps:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}, {len(marks)} of {steps} steps")
    marks = marks[warmup:]
    walls = [b[0] - a[0] for a, b in zip(marks, marks[1:])]
    cpus = [(b[1] - a[1]) / 1e9 for a, b in zip(marks, marks[1:])]
    return statistics.median(walls), statistics.median(cpus)


def command(job, mode, build, steps, tmp, n):
    script = JOBS[job]
    if script is None:
        if mode == "torch.profiler":
            return None
        base = [os.path.join(build, "bin", "gpt_train"), *CPP_ARGS, "--steps", str(steps)]
    else:
        prof = ["--torch-profiler"] if mode == "torch.profiler" else []
        base = [sys.executable, JOB, *prof, *script, "--steps", str(steps)]
    if mode == "gcprof":
        return [os.path.join(build, "bin", "gcprof"), "record", "-o",
                os.path.join(tmp, f"{job}-{n}.db"), "--", *base]
    if mode == "heaptrack":
        return ["heaptrack", "-o", os.path.join(tmp, f"{job}-{n}"), *base]
    return base


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--short", action="store_true",
                    help="one round of 5 steps of resnet18 and gpt2 (make bench)")
    a = ap.parse_args()
    if a.short:
        a.rounds, a.steps, a.jobs = 1, 5, "resnet18,gpt2"
    jobs = a.jobs.split(",")
    modes = [m for m in a.modes.split(",") if m]
    for j in jobs:
        if j not in JOBS:
            sys.exit(f"side_by_side.py: unknown job {j!r} (known: {', '.join(JOBS)})")
    if "heaptrack" in modes and not shutil.which("heaptrack"):
        print("side_by_side.py: heaptrack not installed (scripts/install-deps); skipped", file=sys.stderr)
        modes.remove("heaptrack")
    if "plain" not in modes:
        modes.insert(0, "plain")
    tmp = tempfile.mkdtemp(prefix="gcprof-sbs-")
    # results[job][mode] = [(wall, cpu) per round]
    results = {j: {m: [] for m in modes} for j in jobs}
    n = 0
    try:
        for r in range(a.rounds):
            for j in jobs:
                order = modes[r % len(modes):] + modes[:r % len(modes)]
                for m in order:
                    argv = command(j, m, a.build, a.steps, tmp, n)
                    n += 1
                    if argv is None:
                        continue
                    results[j][m].append(run_once(argv, tmp, a.steps, a.warmup))
                    w, c = results[j][m][-1]
                    print(f"round {r} {j:9} {m:15} step wall {w:.3f} s  cpu {c:.3f} s",
                          file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, modes, a)


def report(results, modes, a):
    print(f"{a.rounds} rounds x {a.steps} steps (first {a.warmup} dropped), "
          f"one intra-op thread; medians; CPU = whole process tree\n")
    print("| job | mode | step wall (s) | step CPU (s) | CPU ratio | wall ratio | CPU ratio per round |")
    print("|---|---|---:|---:|---:|---:|---|")
    for j, by_mode in results.items():
        plain = by_mode["plain"]
        pw = statistics.median(x[0] for x in plain)
        pc = statistics.median(x[1] for x in plain)
        for m in modes:
            runs = by_mode[m]
            if not runs:
                continue
            w = statistics.median(x[0] for x in runs)
            c = statistics.median(x[1] for x in runs)
            per_round = " ".join(f"{x[1] / p[1]:.3f}" for x, p in zip(runs, plain))
            print(f"| {j} | {m} | {w:.3f} | {c:.3f} | {c / pc:.3f} | {w / pw:.3f} | {per_round} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where a recorded job's CPU goes, thread by thread: the same jobs
as side_by_side.py, recorded with `gcprof record`, and at every `step` line
the job prints, the CPU time of each thread of the job's process tree.

    python3 bench/record/threads.py [--build build] [--jobs py-gpt,vit,gpt2,resnet18]
                                    [--steps 8] [--warmup 2] [--runs 1] [--keep DIR] [--plain]

Per job it prints, per step (median over the steps after the warm-up, the
writer's mean over them, then medians over --runs runs): the CPU of gcprof's
writer thread (named `gcprof-writer`), of the job's other threads (the
training thread, its intra-op and autograd threads), the writer's share of
them, and from the trace the job wrote how many allocation rows and ranges
each step recorded, and the writer's CPU per row.
With --plain, also plain and recorded runs in turn: the job's own threads' CPU
and minor page faults per step in each.

Why this measure: CPU time is hardly touched by the neighbours' load (wall
time is), and the writer's share is a ratio of two threads of one process in
the same seconds, so it holds better on a shared machine than the
plain-vs-recorded ratio of side_by_side.py. Not exactly: at load 9-15 the same
build's writer read 0.98% and 2.50% of resnet18's job in two runs (its many
short wake-ups find cold caches), so take the median of --runs 3 or more.
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import JOBS, ROOT, command, tree_tasks, tree_threads  # noqa: E402  (same jobs, same commands)

WRITER = "gcprof-writer"


def thread_cpu_ns(pid, with_root=False):
    """{'writer': ns, 'job': ns, 'faults': minor page faults of the job's
    threads} over every live thread of pid's descendants; `gcprof record`
    itself (pid, the parent that only waits) is left out unless with_root (a
    plain job is pid itself)."""
    totals = {"writer": 0, "job": 0, "faults": 0}
    for name, ns in tree_threads(pid, with_root=with_root):
        totals["writer" if name == WRITER else "job"] += ns
    totals["faults"] = job_minor_faults(pid, with_root)
    return totals


def job_minor_faults(pid, with_root):
    """Minor page faults of every thread but the writer of pid's descendants
    (/proc/<pid>/task/<tid>/stat, field 10): a count, not a time, so the
    neighbours' load does not move it. They follow glibc's heap trimming,
    which changes from step to step in plain runs as in recorded ones
    (bench/history/recording-overhead.md): compare medians over several runs."""
    total = 0
    for task in tree_tasks(pid, with_root):
        try:
            with open(f"{task}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name != WRITER:
            total += int(stat[stat.rindex(")") + 2:].split()[7])
    return total


def rows_per_step(db, first_step):
    """(allocation rows, ranges) per step of the trace's last run, from first_step on."""
    con = sqlite3.connect(db)
    try:
        run = con.execute("SELECT max(id) FROM runs").fetchone()[0]
        def per_step(table):
            counts = [n for (n,) in con.execute(
                f"SELECT count(*) FROM {table} WHERE run = ? AND step >= ? GROUP BY step",
                (run, first_step))]
            return statistics.median(counts) if counts else 0
        return per_step("allocations"), per_step("ranges")
    finally:
        con.close()


def run_once(job, build, steps, warmup, tmp, n, mode="gcprof"):
    """Per step of one run: (writer ms, a mean; job threads ms and job minor
    faults, medians; allocation rows, ranges); rows and ranges 0 for a plain run."""
    argv = command(job, mode, build, steps, tmp, n)
    recorded = mode != "plain"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(argv, cwd=tmp, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    marks = []
    for line in proc.stdout:
        if line.startswith("step "):
            marks.append(thread_cpu_ns(proc.pid, with_root=not recorded))
    if proc.wait() != 0 or len(marks) < steps:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}, {len(marks)} of {steps} steps")
    marks = marks[warmup:]

    def per_step(key, scale=1.0):
        return statistics.median((b[key] - a[key]) * scale for a, b in zip(marks, marks[1:]))

    def mean_per_step(key, scale=1.0):
        # The writer works in rounds of 200 ms, several steps apart on a
        # short-step job: its median step is 0, its cost the mean.
        return (marks[-1][key] - marks[0][key]) * scale / max(1, len(marks) - 1)
    allocs, ranges = rows_per_step(argv[argv.index("-o") + 1], warmup) if recorded else (0, 0)
    return mean_per_step("writer", 1e-6), per_step("job", 1e-6), per_step("faults"), allocs, ranges


def compare_plain(jobs, a, tmp):
    """Plain and recorded runs of each job one after the other (alternating
    which goes first): the job's own threads, CPU and minor page faults per
    step. The faults are exact counts; the CPU ratio is as good as the load."""
    print("\n| job | runs | job threads CPU / step, plain (ms) | recorded (ms) | recorded / plain "
          "| minor faults / step, plain | recorded |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    n = 1000
    for j in jobs:
        ratios, cpu, faults = [], {"plain": [], "gcprof": []}, {"plain": [], "gcprof": []}
        for r in range(a.runs):
            got = {}
            for m in (("plain", "gcprof") if r % 2 == 0 else ("gcprof", "plain")):
                got[m] = run_once(j, a.build, a.steps, a.warmup, tmp, n, m)
                n += 1
            for m in got:
                cpu[m].append(got[m][1])
                faults[m].append(got[m][2])
            ratios.append(got["gcprof"][1] / got["plain"][1])
        med = statistics.median
        print(f"| {j} | {a.runs} | {med(cpu['plain']):.1f} | {med(cpu['gcprof']):.1f} | "
              f"{med(ratios):.3f} ({' '.join(f'{x:.3f}' for x in ratios)}) | "
              f"{med(faults['plain']):.0f} | {med(faults['gcprof']):.0f} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--jobs", default="py-gpt,vit,gpt2,resnet18")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--keep", help="keep the traces in this folder")
    ap.add_argument("--plain", action="store_true",
                    help="also compare the job's own threads plain vs recorded (CPU, page faults)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)  # the jobs run in a temporary folder
    jobs = a.jobs.split(",")
    for j in jobs:
        if j not in JOBS:
            sys.exit(f"threads.py: unknown job {j!r} (known: {', '.join(JOBS)})")
    tmp = a.keep or tempfile.mkdtemp(prefix="gcprof-threads-")
    os.makedirs(tmp, exist_ok=True)
    print(f"{a.runs} run(s) x {a.steps} steps (first {a.warmup} dropped) per job, recorded, "
          f"one intra-op thread; per step medians (the writer's: means); "
          f"load average {os.getloadavg()[0]:.1f} at the start\n")
    print("| job | writer CPU / step (ms) | job threads CPU / step (ms) | writer / job | "
          "allocation rows / step | ranges / step | writer µs / row |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    n = 0
    for j in jobs:
        runs = []
        for _ in range(a.runs):
            runs.append(run_once(j, a.build, a.steps, a.warmup, tmp, n))
            n += 1
        w = statistics.median(r[0] for r in runs)
        c = statistics.median(r[1] for r in runs)
        share = statistics.median(r[0] / r[1] for r in runs)
        al = statistics.median(r[3] for r in runs)
        rg = statistics.median(r[4] for r in runs)
        per_row = 1000 * w / (al + rg) if al + rg else 0
        print(f"| {j} | {w:.2f} | {c:.1f} | {100 * share:.2f}% | {al:.0f} | {rg:.0f} | {per_row:.2f} |",
              flush=True)
    if a.plain:
        compare_plain(jobs, a, tmp)


if __name__ == "__main__":
    main()

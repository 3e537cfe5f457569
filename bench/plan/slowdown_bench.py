#!/usr/bin/env python3
"""Predicted vs measured slowdown of a checkpoint plan, paired.

    slowdown_bench.py BUILD_DIR [--rounds 4] [--jobs sample,gpt2] [--out DIR]

For each job: record a baseline, advise `--strategy every` on it (every unit
checkpointed: the largest recomputation, so the clearest signal), then run
ROUNDS alternating pairs of the job *without* the profiler: plain, and with
the plan applied (`gcprof apply`). That is the slowdown a user's job sees.
Each run goes through step_clock.py (one intra-op thread, per-step wall and
process CPU time); the first step (imports, warm-up) is dropped and the
median over all steps of each side is taken. CPU time is the less noisy
measure on a shared machine: another process's work does not count in it.

Prints the measured slowdown (CPU and wall) next to advise's prediction, and
the parts of the prediction: the units' recorded forward time with the
recording's hook cost subtracted, and the recorded step time.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLOCK = os.path.join(HERE, "step_clock.py")
JOBS = {
    "sample": [os.path.join(ROOT, "samples", "python", "train_gpt.py"), "--layers", "8",
               "--hidden", "64", "--heads", "4", "--seq", "128", "--batch", "16", "--vocab", "256",
               "--steps", "8"],
    "gpt2": [os.path.join(ROOT, "tests", "e2e", "public_model_job.py"), "gpt2", "--steps", "8"],
}
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def gcprof(build, *args):
    out = subprocess.run([os.path.join(build, "bin", "gcprof"), *args], capture_output=True, text=True, env=ENV)
    if out.returncode not in (0, 1):
        sys.exit("gcprof %s: exit %d\n%s" % (" ".join(args), out.returncode, out.stderr))
    return out


def clocked(prefix, argv, out):
    """Runs argv under step_clock.py; returns its steps after the first."""
    subprocess.run([*prefix, sys.executable, CLOCK, out, *argv], env=ENV, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)[1:]


def median(steps, key):
    return statistics.median(s[key] for s in steps)


def bench(build, name, argv, rounds, work):
    db = os.path.join(work, name + ".db")
    if os.path.exists(db):
        os.remove(db)
    gcprof(build, "record", "-o", db, "--name", "baseline", "--", sys.executable, *argv)
    plan_path = os.path.join(work, name + "-plan.json")
    gcprof(build, "advise", db, "--strategy", "every", "--run", "1", "-o", plan_path)
    with open(plan_path) as f:
        plan = json.load(f)
    plain, planned = [], []
    for r in range(rounds):
        plain += clocked([], argv, os.path.join(work, "%s-plain-%d.json" % (name, r)))
        planned += clocked([os.path.join(build, "bin", "gcprof"), "apply", plan_path, "--"], argv,
                           os.path.join(work, "%s-plan-%d.json" % (name, r)))
    cpu = median(planned, "cpu_ns") / median(plain, "cpu_ns") - 1
    wall = median(planned, "wall_ns") / median(plain, "wall_ns") - 1
    print("%-7s every (%d units), %d rounds x %d steps a side:" % (name, len(plan["checkpoint"]), rounds,
                                                                  len(plain) // rounds))
    print("   measured  %+6.1f%% CPU (%.1f vs %.1f ms a step), %+6.1f%% wall (%.1f vs %.1f ms)"
          % (cpu * 100, median(planned, "cpu_ns") / 1e6, median(plain, "cpu_ns") / 1e6,
             wall * 100, median(planned, "wall_ns") / 1e6, median(plain, "wall_ns") / 1e6))
    print("   of that, kernel time %.1f vs %.1f ms a step, minor page faults %d vs %d a step (the host "
          "allocator handing memory back and faulting it in again)"
          % (median(planned, "sys_ns") / 1e6, median(plain, "sys_ns") / 1e6, median(planned, "page_faults"),
             median(plain, "page_faults")))
    print("   predicted %+6.1f%% (recompute %.1f ms / recorded step %.1f ms; hook cost %.1f us a module call)"
          % (plan["predicted"]["slowdown"] * 100, plan["predicted"]["recompute_ns"] / 1e6,
             plan["baseline"]["step_ns"] / 1e6, plan["recording_cost"]["hook_ns_per_module_call"] / 1e3))
    print("   prediction off by %+.0f%% of the measured CPU slowdown" % ((plan["predicted"]["slowdown"] / cpu - 1) * 100
                                                                     if cpu > 0 else float("nan")))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--jobs", default="sample,gpt2")
    ap.add_argument("--out", help="keep the traces and step times here (default: a temporary folder)")
    a = ap.parse_args()
    work = a.out or tempfile.mkdtemp(prefix="gcprof-slowdown-")
    os.makedirs(work, exist_ok=True)
    print("slowdown_bench: OMP_NUM_THREADS=1, load average %.1f at start" % os.getloadavg()[0])
    for name in a.jobs.split(","):
        bench(a.build, name, JOBS[name], a.rounds, work)
    print("load average %.1f at the end" % os.getloadavg()[0])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Selective checkpoints against `every` and torchtitan's selective rule
(`--strategy matmuls`), on one recording (results in
bench/history/selective.md).

    python3 bench/plan/selective_bench.py BUILD [--jobs gpt,hf-gpt2,hf-gpt2-vocab] [--rounds 3] [--out DIR]
    python3 bench/plan/selective_bench.py BUILD --sweep [--jobs gpt]   # the budget sweep only

Per job: record once with --ops (what advise plans from); advise `every`,
`matmuls`, and `optimal` at the peak `every` is predicted to reach and at
the one `matmuls` is predicted to reach (`--budget <peak> --headroom 0`);
verify each plan by a re-run (measured peak, verdict). Then ROUNDS rounds
of the job without the profiler, alternating plain and every plan applied
(`gcprof apply`), each run under step_clock.py (one intra-op thread, process
CPU time per optimizer step; the first step is dropped): the step time
overhead over plain is the ratio of the medians. CPU time is the less noisy
measure on a shared machine (another process's work does not count in it).
Prints one Markdown row per plan.
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
# Per job its script and the transformer blocks as units (`--units`): the
# unit torchtitan checkpoints, and the one selective options are offered for
# (over the module tree's default sub-module units a block is not).
JOBS = {
    "gpt": ([os.path.join(ROOT, "samples", "python", "train_gpt.py"), "--layers", "4", "--hidden", "64",
             "--heads", "4", "--seq", "128", "--batch", "8", "--vocab", "256", "--steps", "4",
             "--dropout", "0.1"], r"layers\.[0-9]+"),
    "hf-gpt2": ([os.path.join(ROOT, "tests", "e2e", "public_model_job.py"), "gpt2", "--steps", "4"],
                r"transformer\.h\.[0-9]+"),
    # GPT-2's default vocabulary (50257), as a GPT2Config from a small config
    # keeps it: the peak moves to the logits and the cross-entropy.
    "hf-gpt2-vocab": ([os.path.join(ROOT, "tests", "e2e", "public_model_job.py"), "gpt2-vocab", "--steps", "4"],
                      r"transformer\.h\.[0-9]+"),
}
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def gcprof(build, *args):
    p = subprocess.run([os.path.join(build, "bin", "gcprof"), *args], capture_output=True, text=True, env=ENV)
    if p.returncode not in (0, 1):
        sys.exit("gcprof %s exited %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def clocked(prefix, argv, out):
    """Runs argv under step_clock.py; returns the CPU ns of its steps after the first."""
    subprocess.run([*prefix, sys.executable, CLOCK, out, *argv], env=ENV, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as f:
        return [s["cpu_ns"] for s in json.load(f)[1:]]


SWEEP_MIB = [0, 0.5, 1, 2, 4, 8, 12, 13, 16, 20]


def sweep(build, name, units, db, work):
    """Predicted recompute of the optimal plan at every's peak + x MiB (x in
    SWEEP_MIB, `--headroom 0`): one Markdown row, and whether the plan's
    per-segment prices add up to its total (one price)."""
    def plan_at(label, *extra):
        path = os.path.join(work, "%s-sweep-%s.json" % (name, label))
        gcprof(build, "advise", db, "--run", "1", "--units", units, *extra, "-o", path)
        with open(path) as f:
            return json.load(f)
    every = plan_at("every", "--strategy", "every")
    peak = every["predicted"]["peak_bytes"]
    cells, mismatches, last, monotone = [], 0, None, True
    for x in SWEEP_MIB:
        plan = plan_at(str(x), "--budget", "%dB" % (peak + int(x * 2**20)), "--headroom", "0")
        total = plan["predicted"]["recompute_ns"]
        parts = sum(seg.get("recompute_ns", 0) for seg in plan["segments"])
        mismatches += parts != total
        if last is not None and total > last:
            monotone = False
        last = total
        selective = sum(1 for seg in plan["segments"] if seg.get("policy") == "selective")
        cells.append("%.1f%s" % (total / 1e6, " (%ds)" % selective if selective else ""))
    print("| %s (every %.1f MiB, %.1f ms) | %s |" % (name, peak / 2**20, every["predicted"]["recompute_ns"] / 1e6,
                                                   " | ".join(cells)))
    print("  monotone: %s; plans whose per-segment recompute does not add up to the total: %d of %d"
          % ("yes" if monotone else "NO", mismatches, len(SWEEP_MIB)), flush=True)


def bench(build, name, job, rounds, work, sweep_only=False):
    argv, units = job
    db = os.path.join(work, name + ".db")
    if os.path.exists(db):
        os.remove(db)
    gcprof(build, "record", "-o", db, "--ops", "--", sys.executable, *argv)
    if sweep_only:
        sweep(build, name, units, db, work)
        return
    plans = {}

    def advise(label, *extra):
        path = os.path.join(work, "%s-%s.json" % (name, label))
        gcprof(build, "advise", db, "--run", "1", "--units", units, *extra, "-o", path)
        with open(path) as f:
            plans[label] = (path, json.load(f))

    advise("every", "--strategy", "every")
    advise("matmuls", "--strategy", "matmuls")
    for base in ("every", "matmuls"):
        peak = plans[base][1]["predicted"]["peak_bytes"]
        advise("optimal at %s's peak" % base, "--budget", "%dB" % peak, "--headroom", "0")
    measured = {}
    for label, (path, plan) in plans.items():
        gcprof(build, "verify", db, "--plan", path)
        rep = json.loads(gcprof(build, "report", db, "--format", "json").stdout)
        measured[label] = (rep["measured"]["peak_bytes"], rep["verdict"])
    cpu = {label: [] for label in ["plain", *plans]}
    for r in range(rounds):
        cpu["plain"] += clocked([], argv, os.path.join(work, "%s-plain-%d.json" % (name, r)))
        for i, (label, (path, _)) in enumerate(plans.items()):
            cpu[label] += clocked([os.path.join(build, "bin", "gcprof"), "apply", path, "--"], argv,
                                  os.path.join(work, "%s-%d-%d.json" % (name, i, r)))
    plain = statistics.median(cpu["plain"])
    for label, (path, plan) in plans.items():
        segs = plan["segments"]
        selective = sum(1 for s in segs if s.get("policy") == "selective")
        kept = sum(s.get("kept_bytes", 0) for s in segs)
        step = statistics.median(cpu[label])
        print("| %s | %s | %d (%d selective, keeps %.2f MiB) | %.2f | %.2f | %.0f | %.1f | %+.1f%% | %s |" % (
            name, label, len(segs), selective, kept / 2**20, plan["predicted"]["peak_bytes"] / 2**20,
            measured[label][0] / 2**20, plan["predicted"]["recompute_ns"] / 1e6, step / 1e6,
            (step / plain - 1) * 100, measured[label][1]), flush=True)
    print("| %s | plain (no profiler) | | | | | %.1f | | |" % (name, plain / 1e6), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--out", help="keep the traces, plans and step times here (default: a temporary folder)")
    ap.add_argument("--sweep", action="store_true",
                    help="only the budget sweep: predicted recompute at every's peak + %s MiB" %
                    ",".join("%g" % x for x in SWEEP_MIB))
    a = ap.parse_args()
    work = a.out or tempfile.mkdtemp(prefix="gcprof-selective-bench-")
    os.makedirs(work, exist_ok=True)
    if a.sweep:
        print("selective_bench --sweep: load average %.1f at start" % os.getloadavg()[0])
        print("| job | %s |" % " | ".join("+%g MiB" % x for x in SWEEP_MIB))
        print("|---|%s" % ("---:|" * len(SWEEP_MIB)))
        for name in a.jobs.split(","):
            bench(a.build, name, JOBS[name], a.rounds, work, sweep_only=True)
        return
    print("selective_bench: OMP_NUM_THREADS=1, %d rounds, load average %.1f at start" % (a.rounds, os.getloadavg()[0]))
    print("| job | plan | segments | predicted peak MiB | measured peak MiB | predicted recompute ms/step "
          "| CPU ms/step (median) | over plain | verdict |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for name in a.jobs.split(","):
        bench(a.build, name, JOBS[name], a.rounds, work)
    print("load average %.1f at the end" % os.getloadavg()[0])


if __name__ == "__main__":
    main()

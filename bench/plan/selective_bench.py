#!/usr/bin/env python3
"""Selective checkpoints against `every` and the hand-written "save matmuls"
rule, on one recording (issue 10; results in bench/RESULTS.md).

    python3 bench/plan/selective_bench.py build [--jobs gpt,hf-gpt2]

Per job: record once with --ops (what advise plans from) and once without
(the baseline step time the verification runs compare with: they record
without --ops); then the plans `every`, `matmuls` (every unit keeping its
matrix products, torchtitan's rule) and `optimal` at the peak `every` is
predicted to reach (--headroom 0), each verified by a re-run. Prints one
Markdown row per plan: predicted and measured peak, predicted recompute,
measured step time and its overhead over the plain baseline.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOBS = {
    "gpt": [sys.executable, os.path.join(ROOT, "samples", "python", "train_gpt.py"), "--layers", "4",
            "--hidden", "64", "--heads", "4", "--seq", "128", "--batch", "8", "--vocab", "256",
            "--steps", "4", "--dropout", "0.1"],
    "hf-gpt2": [sys.executable, os.path.join(ROOT, "tests", "e2e", "public_model_job.py"), "gpt2",
                "--steps", "4"],
}


def gcprof(build, *args):
    p = subprocess.run([os.path.join(build, "bin", "gcprof"), *args], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit("gcprof %s exited %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def step_ms(db, run):
    import sqlite3
    con = sqlite3.connect(db)
    rows = [e - s for s, e in con.execute("SELECT start_ns, end_ns FROM steps WHERE run = ? ORDER BY step",
                                          (run,))]
    con.close()
    return statistics.median(rows[1:] if len(rows) > 1 else rows) / 1e6


def bench(build, name, argv):
    d = tempfile.mkdtemp(prefix="gcprof-selective-bench-")
    db = os.path.join(d, "trace.db")
    gcprof(build, "record", "-o", db, "--ops", "--", *argv)
    gcprof(build, "record", "-o", db, "--", *argv)  # run 2: plain baseline
    plain = step_ms(db, 2)
    every = json.loads(gcprof(build, "advise", db, "--run", "1", "--strategy", "every", "--json",
                              "--no-store").stdout)
    budget = every["predicted"]["peak_bytes"]
    rows = []
    for strategy, extra in (("every", []), ("matmuls", []),
                            ("optimal", ["--budget", "%dB" % budget, "--headroom", "0"])):
        plan = os.path.join(d, strategy + ".json")
        gcprof(build, "advise", db, "--run", "1", "--strategy", strategy, *extra, "-o", plan)
        p = json.load(open(plan))
        v = gcprof(build, "verify", db, "--plan", plan)
        rep = json.loads(gcprof(build, "report", db, "--format", "json").stdout)
        selective = sum(1 for s in p["segments"] if s.get("policy") == "selective")
        measured = rep["measured"]["step_ns"] / 1e6
        rows.append("| %s | %s | %d (%d selective) | %.2f | %.2f | %.0f | %.0f | %+.1f%% | %s |" % (
            name, strategy, len(p["segments"]), selective, p["predicted"]["peak_bytes"] / 2**20,
            rep["measured"]["peak_bytes"] / 2**20, p["predicted"]["recompute_ns"] / 1e6, measured,
            (measured / plain - 1) * 100, rep["verdict"]))
        print(rows[-1], flush=True)
    print("| %s | recorded (no --ops) | | | %.2f (--ops run) | | | %.0f | | |"
          % (name, every["baseline"]["peak_bytes"] / 2**20, plain), flush=True)
    return rows


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    names = sys.argv[3].split(",") if len(sys.argv) > 3 and sys.argv[2] == "--jobs" else list(JOBS)
    print("| job | plan | segments | predicted peak MiB | measured peak MiB | predicted recompute ms/step "
          "| measured step ms | over plain baseline | verdict |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for name in names:
        bench(build, name, JOBS[name])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Predicted vs measured slowdown of a checkpoint plan, paired (issue 15).

    slowdown_bench.py BUILD_DIR [--rounds 3] [--jobs sample,gpt2]

For each job: record a baseline, advise `--strategy every` on it, then run
ROUNDS alternating pairs (record the job again / verify the plan) and take
the median step time of each side (both recorded, so the recording's cost is
the same on both). Prints the measured slowdown next to the prediction with
the recording's hook cost subtracted (what advise says now) and without it
(the raw recorded forward times: what advise said before issue 15).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JOBS = {
    "sample": [sys.executable, os.path.join(ROOT, "samples", "python", "train_gpt.py"), "--layers", "8",
               "--hidden", "64", "--heads", "4", "--seq", "128", "--batch", "16", "--vocab", "256",
               "--steps", "5"],
    "gpt2": [sys.executable, os.path.join(ROOT, "tests", "e2e", "public_model_job.py"), "gpt2", "--steps", "5"],
}


def gcprof(build, *args):
    out = subprocess.run([os.path.join(build, "bin", "gcprof"), *args], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit("gcprof %s: exit %d\n%s" % (" ".join(args), out.returncode, out.stderr))
    return out


def median_step_ns(db, run):
    import sqlite3
    con = sqlite3.connect(db)
    d = sorted(e - s for s, e in con.execute("SELECT start_ns, end_ns FROM steps WHERE run = ? ORDER BY step", (run,)))
    con.close()
    return statistics.median(d[1:] if len(d) >= 3 else d)


def bench(build, name, argv, rounds):
    db = os.path.join(tempfile.mkdtemp(prefix="gcprof-slowdown-"), "trace.db")
    gcprof(build, "record", "-o", db, "--name", "baseline", "--", *argv)
    plan_path = os.path.join(os.path.dirname(db), "plan.json")
    gcprof(build, "advise", db, "--strategy", "every", "--run", "1", "-o", plan_path)
    plan = json.load(open(plan_path))
    base_ns = plan["baseline"]["step_ns"]
    predicted = plan["predicted"]["slowdown"]
    show = json.loads(gcprof(build, "show", db, "--run", "1", "--json").stdout)["runs"][0]
    raw = {u["name"]: u["forward_ns"] for u in show["units"]}
    raw_recompute = sum(raw[n] for seg in plan["checkpoint"] for n in seg)
    predicted_raw = raw_recompute / base_ns
    plain, planned = [], []
    for r in range(rounds):
        gcprof(build, "record", "-o", db, "--name", "baseline again", "--", *argv)
        plain.append(median_step_ns(db, max(x["id"] for x in json.loads(gcprof(build, "show", db, "--json").stdout)["runs"])))
        v = gcprof(build, "verify", db, "--plan", plan_path)
        planned.append(median_step_ns(db, max(x["id"] for x in json.loads(gcprof(build, "show", db, "--json").stdout)["runs"])))
    measured = statistics.median(planned) / statistics.median(plain) - 1
    print("%-7s every (%d units): measured %+.1f%% (median of %d pairs: %.1f vs %.1f ms); predicted %+.1f%% "
          "(hook cost %.1f us/call subtracted), %+.1f%% from raw forward times"
          % (name, len(plan["checkpoint"]), measured * 100, rounds, statistics.median(planned) / 1e6,
             statistics.median(plain) / 1e6, predicted * 100,
             plan["recording_cost"]["hook_ns_per_module_call"] / 1e3, predicted_raw * 100))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", default="sample,gpt2")
    a = ap.parse_args()
    for name in a.jobs.split(","):
        bench(a.build, name, JOBS[name], a.rounds)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Budgets bound the peak, monotonically: a 20-budget sweep, each plan verified.

    sweep.py BUILD_DIR [--budgets 20] [--jobs py,cpp] [--out DIR]

For each job: record a baseline, take its recorded peak and `every`'s
predicted peak, then for BUDGETS budgets evenly from the recorded peak down
to `every`'s: `gcprof advise --budget B -o plan.json` and `gcprof verify`.
Prints one row per budget (plan, predicted and measured peak, verdict) and a
summary per job: inversions (a lower budget whose plan measured a higher
peak than the plan of the budget above it; goal 0), whether every measured
peak was within its budget, and the budgets advise refused (below what any
plan reaches with advise's headroom kept). Consecutive budgets with the same
plan measure the same peak up to the job's run-to-run jitter; that jitter is
printed, and a rise between two runs of the *same* plan is not counted as an
inversion (no plan choice made it).

torch.compile's activation_memory_budget is not monotonic
(pytorch/pytorch#197838); tests/advisor/budget_monotone_test.cpp checks the
same property on the predictions, cheaply, in CI.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL = ["--layers", "6", "--hidden", "64", "--heads", "4", "--seq", "128", "--batch", "16",
         "--vocab", "256", "--steps", "3"]


def jobs(build):
    return {
        "py": [sys.executable, os.path.join(ROOT, "samples", "python", "train_gpt.py"), *MODEL],
        "cpp": [os.path.join(build, "bin", "gpt_train"), *MODEL],
    }


def gcprof(build, *args, ok=(0,)):
    out = subprocess.run([os.path.join(build, "bin", "gcprof"), *args], capture_output=True, text=True)
    if out.returncode not in ok:
        sys.exit("gcprof %s: exit %d\n%s%s" % (" ".join(args), out.returncode, out.stdout, out.stderr))
    return out


def mib(b):
    return "%.2f" % (b / 2**20)


def sweep(build, name, argv, count, work):
    db = os.path.join(work, name + ".db")
    if os.path.exists(db):
        os.remove(db)
    gcprof(build, "record", "-o", db, "--", *argv)
    every = json.loads(gcprof(build, "advise", db, "--strategy", "every", "--json", "--no-store").stdout)
    recorded = every["baseline"]["peak_bytes"]
    every_peak = every["predicted"]["peak_bytes"]
    rows = []
    for i in range(count):
        budget = recorded - (recorded - every_peak) * i // (count - 1)
        plan_path = os.path.join(work, "%s-plan-%02d.json" % (name, i))
        advised = gcprof(build, "advise", db, "--budget", "%dB" % budget, "-o", plan_path, ok=(0, 1))
        if advised.returncode != 0:
            rows.append({"budget": budget, "plan": None, "why": advised.stderr.strip().splitlines()[-1]})
            print("%-4s %2d budget %s MiB: no plan (%s)" % (name, i + 1, mib(budget), rows[-1]["why"][:100]),
                  flush=True)
            continue
        with open(plan_path) as f:
            plan = json.load(f)
        gcprof(build, "verify", db, "--plan", plan_path, ok=(0, 1))
        v = json.loads(gcprof(build, "report", db, "--format", "json", ok=(0, 1)).stdout)
        rows.append({"budget": budget, "plan": json.dumps(plan.get("segments", plan["checkpoint"]), sort_keys=True),
                     "units": len(plan["checkpoint"]), "predicted": v["predicted"]["peak_bytes"],
                     "measured": v["measured"]["peak_bytes"], "verdict": v["verdict"]})
        r = rows[-1]
        print("%-4s %2d budget %s MiB: %2d segments, predicted %s, measured %s MiB, %s" % (
            name, i + 1, mib(budget), r["units"], mib(r["predicted"]), mib(r["measured"]), r["verdict"]),
            flush=True)
    return recorded, every_peak, rows


def summary(name, recorded, every_peak, rows):
    planned = [r for r in rows if r["plan"]]
    inversions, jitter, plans = 0, 0, set()
    for hi, lo in zip(planned, planned[1:]):  # budgets fall from hi to lo
        if lo["plan"] == hi["plan"]:
            jitter = max(jitter, abs(lo["measured"] - hi["measured"]))
        elif lo["measured"] > hi["measured"]:
            inversions += 1
    predicted_inversions = sum(1 for hi, lo in zip(planned, planned[1:]) if lo["predicted"] > hi["predicted"])
    within = all(r["measured"] <= r["budget"] for r in planned)
    passed = sum(1 for r in planned if r["verdict"] == "PASS")
    plans = len({r["plan"] for r in planned})
    print("\n%s: recorded peak %s MiB, every %s MiB; %d budgets, %d with a plan (%d distinct plans), "
          "%d refused; inversions %d measured, %d predicted; every measured peak within its budget: %s; "
          "verify PASS %d of %d; same-plan jitter %s MiB" % (
              name, mib(recorded), mib(every_peak), len(rows), len(planned), plans, len(rows) - len(planned),
              inversions, predicted_inversions, "yes" if within else "NO", passed, len(planned), mib(jitter)))
    return inversions, within


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--budgets", type=int, default=20)
    ap.add_argument("--jobs", default="py,cpp")
    ap.add_argument("--out", default=None, help="work directory (default: a temporary one)")
    a = ap.parse_args()
    work = a.out or tempfile.mkdtemp(prefix="gcprof-budgets-")
    os.makedirs(work, exist_ok=True)
    all_jobs = jobs(os.path.abspath(a.build))
    ok = True
    for name in a.jobs.split(","):
        recorded, every_peak, rows = sweep(os.path.abspath(a.build), name, all_jobs[name], a.budgets, work)
        inversions, within = summary(name, recorded, every_peak, rows)
        ok = ok and inversions == 0 and within
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

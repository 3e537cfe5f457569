#!/usr/bin/env python3
"""What-if accuracy: record a job at a few batches (default 2 and
4; `--sizes 2,4,8` for the recommended three), predict the peak at batch 16
for none / every / optimal and the largest batch that fits a budget, then run
those batches with the plans (gcprof verify --size-arg) and compare. Prints
Markdown rows for bench/RESULTS.md.

The budget is a percentage of the batch-4 recording's peak (`--budget-of 4`)
given to advise in bytes, so that runs recorded at different size sets are
asked the same question; `--headroom 0`, so that "fits" means below it.

    python3 bench/what_if/what_if_bench.py [BUILD_DIR] [--budget 130%] [--sizes 2,4,8]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JOBS = {
    "python GPT sample": [sys.executable, os.path.join(ROOT, "samples/python/train_gpt.py"),
                          "--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "128",
                          "--vocab", "256", "--steps", "3"],
    "HF GPT-2 (4 layers, 64 wide)": [sys.executable, os.path.join(ROOT, "bench/what_if/hf_gpt2_train.py"),
                                      "--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "128",
                                      "--vocab", "256", "--steps", "3"],
}


def run(gcprof, *args, check=True):
    p = subprocess.run([gcprof, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise SystemExit(f"gcprof {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def measured(gcprof, db, budget, strategy, size):
    """Plan `strategy` for `size`, run it, return (predicted, measured) peak bytes."""
    plan = os.path.join(os.path.dirname(db), f"plan-{strategy}-{size}.json")
    a = run(gcprof, "advise", db, "--what-if", "batch", "--budget", budget, "--headroom", "0",
            "--size", str(size), "--strategy", strategy, "-o", plan, check=False)
    if not os.path.exists(plan):
        return None, None
    run(gcprof, "verify", db, "--plan", plan, "--size-arg=--batch {size}", check=False)
    rep = json.loads(run(gcprof, "report", db, "--format", "json", check=False).stdout)
    return rep["predicted"]["peak_bytes"], rep["measured"]["peak_bytes"]


def mib(b):
    return f"{b / 2**20:.2f} ({b:,} B)" if b is not None else "-"


def bench(gcprof, name, argv, percent, sizes, budget_of):
    db = os.path.join(tempfile.mkdtemp(prefix="gcprof-what-if-bench-"), "trace.db")
    for b in sizes:
        run(gcprof, "record", "-o", db, "--name", f"batch={b}", "--", *argv, "--batch", str(b))
    runs = json.loads(run(gcprof, "show", db, "--json").stdout)["runs"]
    base = next(r["peak_bytes"] for r in runs if r["name"] == f"batch={budget_of}")
    budget_bytes = int(base * float(percent.rstrip("%")) / 100)
    budget = f"{budget_bytes}B"
    # No headroom: the question is whether the prediction is exact at the
    # budget's edge, not whether a safety margin hides its error.
    w = json.loads(run(gcprof, "advise", db, "--what-if", "batch", "--budget", budget, "--headroom", "0",
                       "--json").stdout)
    print(f"\n### {name}: batches {','.join(map(str, sizes))}; budget {percent} of the batch-{budget_of} peak "
          f"= {mib(budget_bytes)} MiB ({budget_bytes} B), {w['fit']} fit, headroom {mib(w['headroom_bytes'])} MiB\n")
    if w.get("fit_check"):
        print(f"fit check: {json.dumps(w['fit_check'])}\n")
    print("| strategy | predicted peak @16 | measured @16 | error |")
    print("|---|---:|---:|---:|")
    for s in ("none", "every", "optimal"):
        pr, me = measured(gcprof, db, budget, s, 16)
        err = f"{(pr - me) / me * 100:+.1f}%" if pr and me else "-"
        print(f"| {s} | {mib(pr)} MiB | {mib(me)} MiB | {err} |", flush=True)
    print("\n| strategy | predicted largest batch | measured peak there | fits | next batch measured | next fits | true largest? |")
    print("|---|---:|---:|---|---:|---|---|")
    largest = {l["strategy"]: l["size"] for l in w["largest"]}
    for s in ("none", "every", "optimal"):
        size = largest[s]
        _, at = measured(gcprof, db, budget, s, size)
        # No optimal plan is written above the largest batch; the plan with
        # the least peak there is `every` for these module-segment jobs.
        _, nxt = measured(gcprof, db, budget, s, size + 1)
        if nxt is None:
            _, nxt = measured(gcprof, db, budget, "every", size + 1)
        fits = at is not None and at <= budget_bytes
        nfits = nxt is not None and nxt <= budget_bytes
        print(f"| {s} | {size} | {mib(at)} MiB | {'yes' if fits else 'NO'} | {mib(nxt)} MiB | "
              f"{'YES' if nfits else 'no'} | {'yes' if fits and not nfits else 'NO'} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--budget", default="130%")
    ap.add_argument("--only", default="")
    ap.add_argument("--sizes", default="2,4", help="batches to record, e.g. 2,4,8")
    ap.add_argument("--budget-of", type=int, default=4, help="the budget is a percentage of this batch's peak")
    a = ap.parse_args()
    gcprof = os.path.join(a.build, "bin", "gcprof")
    for name, argv in JOBS.items():
        if a.only and a.only not in name:
            continue
        bench(gcprof, name, argv, a.budget, [int(x) for x in a.sizes.split(",")], a.budget_of)


if __name__ == "__main__":
    main()

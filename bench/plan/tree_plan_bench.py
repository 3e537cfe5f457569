#!/usr/bin/env python3
"""Peak vs recompute per strategy on public models: every, uniform, the
block-level optimum and the tree optimum (plans over the module tree), at
three budgets, predicted by `gcprof advise` and measured by `gcprof verify`.

    python3 bench/plan/tree_plan_bench.py [--gcprof build/bin/gcprof] [--out DIR]

Records GPT-2 and the ViT of samples/python/train_public.py with the
configurations of tests/e2e/test_public_models.py, advises each plan, verifies
every distinct plan once, and prints a Markdown table (bench/RESULTS.md).
The block-level optimum is the same search over the blocks alone
(`--units` with a regex of the blocks keeps plans to one level).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLIC = os.path.join(ROOT, "samples", "python", "train_public.py")
MODELS = {
    "GPT-2": (["--model", "gpt2", "--layers", "4", "--seq", "256", "--batch", "16"],
              r"transformer\.h\.[0-9]+"),
    "ViT": (["--model", "vit", "--layers", "6", "--image", "128", "--batch", "24"],
            r"encoder\.layers\.encoder_layer_[0-9]+"),
}
BUDGETS = ("60%", "75%", "90%")


def run(cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode not in (0, 1):
        sys.exit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    return r


def mib(b):
    return "%.1f MiB" % (b / 2**20)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gcprof", default=os.path.join(ROOT, "build", "bin", "gcprof"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--models", default=",".join(MODELS))
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="gcprof-tree-bench-")
    rows = []
    for name in a.models.split(","):
        flags, blocks_regex = MODELS[name]
        db = os.path.join(out, name.lower().replace("-", "") + ".db")
        if not os.path.exists(db):
            run([a.gcprof, "record", "-o", db, "--", sys.executable, PUBLIC, *flags])
        measured = {}
        for budget in BUDGETS:
            plans = {"every": ["--strategy", "every"], "uniform": ["--strategy", "uniform"],
                     "block optimum": ["--units", blocks_regex], "tree optimum": []}
            for label, extra in plans.items():
                path = os.path.join(out, "%s-%s-%s.json" % (name, budget.rstrip("%"), label.split()[0]))
                r = run([a.gcprof, "advise", db, "--budget", budget, "-o", path, *extra])
                if not os.path.exists(path):
                    rows.append((name, budget, label, "-", "-", "no plan", "-", r.stderr.strip()[:80]))
                    continue
                with open(path) as f:
                    plan = json.load(f)
                key = json.dumps(plan["checkpoint"])
                if key not in measured:
                    run([a.gcprof, "verify", db, "--plan", path], check=False)
                    rep = json.loads(run([a.gcprof, "report", db, "--format", "json"]).stdout)
                    losses = next((g["passed"] for g in rep["gates"] if g["name"] == "losses match"), False)
                    measured[key] = (rep["measured"]["peak_bytes"], losses)
                # One re-run per distinct plan; whether it fits depends on the row's budget.
                m_peak, losses = measured[key]
                verdict = "%s budget, %+.1f%% vs predicted%s" % (
                    "within" if m_peak <= plan["budget_bytes"] else "over",
                    100.0 * (m_peak - plan["predicted"]["peak_bytes"]) / m_peak,
                    "" if losses else ", losses differ")
                pred = plan["predicted"]
                modules = [s.get("module", s["units"][0]) for s in plan["segments"]]
                rows.append((name, "%s (%s)" % (budget, mib(plan["budget_bytes"])), label,
                             str(len(modules)), mib(pred["peak_bytes"]),
                             "yes" if pred["fits_budget"] else "no",
                             "%.0f ms" % (pred["recompute_ns"] / 1e6),
                             "%s (%s)" % (mib(m_peak), verdict)))
                print(rows[-1], ", ".join(modules), flush=True)
    print("\n| model | budget | strategy | modules | predicted peak | fits | recompute / step | measured peak |")
    print("|---|---|---|---:|---:|---|---:|---:|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""End to end: record a real sample under gcprof, then `gcprof advise` on it.

    advise_e2e.py GCPROF cpp GPT_TRAIN          # LibTorch sample (region segments)
    advise_e2e.py GCPROF py  TRAIN_GPT_PY       # PyTorch sample (module segments)

Checks the issue's promises: a 60% budget gives a feasible plan that
recomputes less than checkpointing every unit; an impossible budget exits 1
naming the smallest reachable peak; bad input exits 2; plans are stored in
the trace; --json and --max-slowdown work.
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    gcprof, kind, sample = sys.argv[1], sys.argv[2], sys.argv[3]
    tmp = tempfile.mkdtemp(prefix="gcprof-advise-e2e-")
    db = os.path.join(tmp, "trace.db")
    job = [sample, "--layers", "6", "--steps", "3"]
    if kind == "py":
        job = [sys.executable] + job
    r = run([gcprof, "record", "-o", db, "--"] + job)
    if r.returncode != 0:
        fail("record failed: " + r.stderr[-2000:])

    if kind == "py":
        # The python shim names the model itself ""; show gives its row a name.
        r = run([gcprof, "show", db])
        rows = [line.split() for line in r.stdout.splitlines() if line.startswith("  ")]
        if not any(row and row[0] == "(model)" for row in rows):
            fail("show has no (model) row:\n" + r.stdout)

    plan_path = os.path.join(tmp, "plan.json")
    r = run([gcprof, "advise", db, "--budget", "60%", "-o", plan_path])
    if r.returncode != 0:
        fail("advise 60%% exited %d: %s" % (r.returncode, r.stderr))
    print(r.stdout)
    p = json.load(open(plan_path))
    for key in ("format", "strategy", "budget_bytes", "checkpoint", "units", "trace_run"):
        if key not in p:
            fail("plan lacks %r" % key)
    if p["format"] != "gcprof.plan/2":
        fail("format %r" % p["format"])
    base, budget, pred = p["baseline"]["peak_bytes"], p["budget_bytes"], p["predicted"]
    if abs(budget - 0.6 * base) > 0.001 * base:
        fail("budget %d is not 60%% of the recorded peak %d" % (budget, base))
    if pred["peak_bytes"] > budget - p["headroom_bytes"]:
        fail("predicted peak %d above the budget %d less its headroom %d"
             % (pred["peak_bytes"], budget, p["headroom_bytes"]))
    # The default rule (advisor/plan/headroom.h): 1% of the budget where
    # torch.utils.checkpoint applies the plan, 3% for the C++ runtime, plus
    # the jitter and the checkpoint arguments not told apart by size.
    h = p["headroom"]
    share = 0.01 if kind == "py" else 0.03
    told = h["jitter_bytes"] + h["untold_arguments_bytes"]
    if abs(p["headroom_bytes"] - (round(share * budget) + told)) > 1 or "jitter" not in h["rule"]:
        fail("default headroom %d (%s) is not %g%% of the budget plus %d B jitter and untold arguments"
             % (p["headroom_bytes"], h["rule"], share * 100, told))
    if "headroom" not in r.stdout or "complete steps, steady from step" not in r.stdout:
        fail("advise does not show the headroom or the steps: " + r.stdout)
    if "search thinned" in r.stdout:
        fail("a %d-unit chain reported a thinned search" % len(p["units"]))
    every = p["compare"]["every"]
    if not pred["recompute_ns"] < every["recompute_ns"]:
        fail("optimal recomputes %d ns, not less than every's %d" % (pred["recompute_ns"], every["recompute_ns"]))
    if pred["step_ns"] != p["baseline"]["step_ns"] + pred["recompute_ns"] and pred["recompute_ns"] > 0:
        # step time = steady step + its recompute (medians may differ by a step)
        if pred["step_ns"] <= p["baseline"]["step_ns"]:
            fail("predicted step time does not include recomputation")
    want_kind = "module" if kind == "py" else "region"
    if p["segment_kind"] != want_kind:
        fail("segment kind %s for a %s run" % (p["segment_kind"], kind))
    if kind == "py" and any(len(seg) != 1 for seg in p["checkpoint"]):
        fail("python plans must checkpoint single modules: %s" % p["checkpoint"])
    units = set(p["units"]) | set(p.get("blocks", []))  # a tree plan may wrap a whole block
    if not p["checkpoint"] or any(n not in units for seg in p["checkpoint"] for n in seg):
        fail("checkpoint names are not units: %s" % p["checkpoint"])

    # Stored in the trace's plans table, with the id in the file.
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT id, strategy, budget_bytes, json FROM plans").fetchall()
    if not stored or p.get("plan_id") not in [s[0] for s in stored]:
        fail("plan not stored in the trace (plans: %s)" % [s[:3] for s in stored])
    if json.loads(stored[-1][3])["checkpoint"] != p["checkpoint"]:
        fail("stored plan differs from the file")

    # The budget-blind strategies never beat optimal when they fit.
    for s in ("every", "uniform"):
        out = os.path.join(tmp, s + ".json")
        r = run([gcprof, "advise", db, "--budget", "60%", "--strategy", s, "-o", out, "--no-store"])
        q = json.load(open(out))
        fits = q["predicted"]["peak_bytes"] <= q["budget_bytes"] - q["headroom_bytes"]
        if (r.returncode == 0) != fits:
            fail("%s: exit %d but fits=%s" % (s, r.returncode, fits))
        if fits and q["predicted"]["recompute_ns"] < pred["recompute_ns"]:
            fail("%s recomputes less than optimal" % s)

    # An impossible budget: exit 1, the smallest reachable peak in the message.
    r = run([gcprof, "advise", db, "--budget", "5%", "--no-store"])
    if r.returncode != 1 or "smallest peak any plan reaches is" not in r.stderr:
        fail("5%% budget: exit %d, stderr %r" % (r.returncode, r.stderr))
    # The budget it says to raise to is accepted as printed, and the size
    # printed one digit lower is not (it named one that failed again).
    hint = re.search(r"Raise the budget to at least ([0-9.]+) ([KMG]iB|B)", r.stderr)
    if not hint:
        fail("5%% budget: no 'Raise the budget to at least' in %r" % r.stderr)
    r = run([gcprof, "advise", db, "--budget", hint.group(1) + hint.group(2), "--no-store"])
    if r.returncode != 0:
        fail("advise at the hinted %s %s exited %d: %s" % (hint.group(1), hint.group(2), r.returncode, r.stderr))
    decimals = len(hint.group(1).partition(".")[2])
    lower = "%.*f%s" % (decimals, float(hint.group(1)) - 10 ** -decimals, hint.group(2))
    r = run([gcprof, "advise", db, "--budget", lower, "--no-store"])
    if r.returncode != 1:
        fail("advise at %s, below the hinted least budget, exited %d" % (lower, r.returncode))

    # --json prints the plan.
    r = run([gcprof, "advise", db, "--budget", "60%", "--json", "--no-store"])
    if r.returncode != 0 or json.loads(r.stdout)["checkpoint"] != p["checkpoint"]:
        fail("--json: exit %d" % r.returncode)

    # The dual: least memory within 10% more step time.
    r = run([gcprof, "advise", db, "--max-slowdown", "10%", "--json", "--no-store"])
    if r.returncode != 0:
        fail("--max-slowdown: exit %d %s" % (r.returncode, r.stderr))
    d = json.loads(r.stdout)
    if d["predicted"]["recompute_ns"] > 0.10 * d["baseline"]["step_ns"] + 1:
        fail("--max-slowdown 10%% recomputes %d of %d" % (d["predicted"]["recompute_ns"], d["baseline"]["step_ns"]))

    # --headroom 0 solves to the budget itself.
    r = run([gcprof, "advise", db, "--budget", "60%", "--headroom", "0", "--json", "--no-store"])
    if r.returncode != 0 or json.loads(r.stdout)["headroom_bytes"] != 0:
        fail("--headroom 0: exit %d %s" % (r.returncode, r.stderr))

    # A size without a unit is not taken as bytes.
    r = run([gcprof, "advise", db, "--budget", "60", "--no-store"])
    if r.returncode != 2 or "no unit" not in r.stderr or "60%" not in r.stderr:
        fail("--budget 60: exit %d, stderr %r" % (r.returncode, r.stderr))

    # Bad input: exit 2 with a message.
    for args in (["/nonexistent/trace.db", "--budget", "60%"],
                 [db, "--budget", "lots"],
                 [db, "--budget", "60%", "--headroom", "100%"],
                 [db, "--budget", "60%", "--headroom", "5"],
                 [db, "--budget", "60%", "--units", "no_such_module\\..*"],
                 [db, "--budget", "60%", "--strategy", "magic"]):
        r = run([gcprof, "advise"] + args + ["--no-store"])
        if r.returncode != 2 or not r.stderr.strip():
            fail("%s: exit %d, stderr %r" % (args, r.returncode, r.stderr))
    print("advise e2e (%s) ok: predicted %.0f%% of the recorded peak, recompute %.2f x every's"
          % (kind, 100.0 * pred["peak_bytes"] / base, pred["recompute_ns"] / every["recompute_ns"]))


if __name__ == "__main__":
    main()

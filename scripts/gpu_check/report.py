#!/usr/bin/env python3
"""The one report of scripts/gpu-check: reads what its runs left in the work
directory (logs, show --json, plans, traces) and writes gpu-check-report.md
and gpu-check-report.json to --out. Exit 0 when every check passed, 1 when
one failed. In the dry run (--device cpu) only the plumbing is checked; the
GPU checks are listed as skipped.
"""
import argparse
import json
import os
import re
import sqlite3
import statistics
import sys

MiB = 2 ** 20
ALLOCATED_TOLERANCE = 0.01  # recorded allocated peak vs torch.cuda.max_memory_allocated
RESERVED_TOLERANCE = 0.05   # reserved peak vs torch.cuda.max_memory_reserved
MAX_OVERHEAD = 1.03         # recorded step time / plain step time
MIN_ATTRIBUTED = 0.90       # kernels launched inside some range


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def step_ms(path):
    """Median interval between consecutive 'step N' lines, the first (warm-up) left out."""
    try:
        t = [int(l.split()[0]) for l in open(path) if re.match(r"^\d+ step \d+", l)]
    except OSError:
        return None
    d = [(b - a) / 1e6 for a, b in zip(t[1:], t[2:])]
    return statistics.median(d) if d else None


def torch_peaks(path):
    try:
        for l in open(path):
            m = re.search(r"gpu-check torch-peaks allocated=(\d+) reserved=(\d+)(?: requested=(-?\d+))?", l)
            if m:
                return int(m.group(1)), int(m.group(2)), int(m.group(3) or -1)
    except OSError:
        pass
    return None


def mib(b):
    return "n/a" if b is None or b < 0 else f"{b / MiB:.1f} MiB"


def kernel_attribution(db, run):
    con = sqlite3.connect(db)
    total, inside = con.execute(
        "SELECT count(*), coalesce(sum(range > 0), 0) FROM kernels WHERE run=?", (run,)).fetchone()
    timed = con.execute("SELECT count(*) FROM ranges WHERE run=? AND device_ns > 0", (run,)).fetchone()[0]
    return total, inside, timed


def verifications(db):
    try:
        con = sqlite3.connect(db)
        rows = con.execute("SELECT plan, verdict, json FROM verifications ORDER BY id").fetchall()
    except sqlite3.Error:
        return {}
    out = {}
    for plan, verdict, doc in rows:
        out[plan] = (verdict, json.loads(doc))
    return out


class Checks:
    def __init__(self, on_gpu):
        self.on_gpu = on_gpu
        self.rows = []  # (name, state, detail): state pass | FAIL | skipped

    def add(self, name, ok, detail, gpu_only=False):
        if gpu_only and not self.on_gpu:
            self.rows.append((name, "skipped", "needs a GPU: " + detail))
        else:
            self.rows.append((name, "pass" if ok else "FAIL", detail))

    def failed(self):
        return [r for r in self.rows if r[1] == "FAIL"]


def job_report(args, job, checks, lines, doc):
    w = args.work
    show = load_json(os.path.join(w, f"{job}-show.json"))
    entry = {"job": job}
    doc["jobs"].append(entry)
    lines.append(f"\n## {job}\n")
    if not show or not show.get("runs"):
        checks.add(f"{job}: recorded", False, "no trace (see gpu-check-logs/" + job + "-record.err)")
        lines.append("no trace recorded")
        return
    r = show["runs"][-1]
    entry["run"] = {k: r.get(k) for k in ("backend", "memory", "steps", "allocations", "kernels", "ranges",
                                           "dropped_events", "unmatched_frees", "peak_bytes",
                                           "allocated_peak_bytes", "reserved_peak_bytes", "reserved_source",
                                           "other_device_peak_bytes")}
    lines.append(f"backend {r['backend']}, memory {r['memory']}, {r['steps']} steps, {r['allocations']} "
                 f"allocations, {r['kernels']} kernels, {r['ranges']} ranges, dropped {r['dropped_events']}, "
                 f"unmatched frees {r['unmatched_frees']}")
    checks.add(f"{job}: recorded", r["steps"] > 0 and r["allocations"] > 0,
               f"{r['steps']} steps, {r['allocations']} allocations")
    checks.add(f"{job}: CUDA backend", r["backend"] == "cuda", f"backend {r['backend']}", gpu_only=True)

    # Peaks against PyTorch's own counters, from the same (recorded) process.
    tp = torch_peaks(os.path.join(w, f"{job}-record.log"))
    alloc, reserved = r.get("allocated_peak_bytes"), r.get("reserved_peak_bytes")
    lines.append("\n| peak | gcprof | torch.cuda | off |\n|---|---|---|---|")
    for label, ours, theirs, tol in (("allocated", alloc, tp[0] if tp else None, ALLOCATED_TOLERANCE),
                                     ("reserved", reserved, tp[1] if tp else None, RESERVED_TOLERANCE)):
        off = abs(ours - theirs) / theirs if ours is not None and ours >= 0 and theirs else None
        lines.append(f"| {label} | {mib(ours)} | {mib(theirs)} | "
                     f"{'n/a' if off is None else f'{off * 100:.2f}%'} |")
        entry[f"{label}_peak"] = {"gcprof": ours, "torch": theirs, "off": off}
        checks.add(f"{job}: {label} peak within {tol * 100:g}% of torch", off is not None and off <= tol,
                   f"gcprof {mib(ours)} vs torch {mib(theirs)}", gpu_only=True)
    # The allocator observed (its trace tracker): tensors at their requested
    # sizes, reserved from its own segment events, not from the model.
    requested = tp[2] if tp and tp[2] >= 0 else None
    if requested is not None and alloc is not None and alloc >= 0:
        off = abs(alloc - requested) / requested if requested else None
        lines.append(f"\ntensor peak vs requested_bytes.all.peak: {mib(alloc)} vs {mib(requested)}"
                     + ("" if off is None else f" ({off * 100:.2f}% off)"))
        entry["requested_peak"] = {"gcprof": alloc, "torch": requested, "off": off}
    checks.add(f"{job}: reserved recorded from the allocator's segments",
               r.get("reserved_source") == "segments" and r.get("other_device_peak_bytes") is not None,
               f"reserved source {r.get('reserved_source')}, other device memory "
               f"{mib(r.get('other_device_peak_bytes'))}", gpu_only=True)
    if not args.on_gpu:
        lines.append(f"\n(host peak recorded: {mib(r['peak_bytes'])})")

    # Overhead, side by side.
    plain, prof, rec = (step_ms(os.path.join(w, f"{job}-{k}.log")) for k in ("plain", "profiler", "record"))
    entry["step_ms"] = {"plain": plain, "torch_profiler": prof, "gcprof": rec}
    if plain:
        lines.append(f"\nstep time (median): plain {plain:.2f} ms"
                     + (f", torch.profiler {prof:.2f} ms (x{prof / plain:.3f})" if prof else "")
                     + (f", gcprof record {rec:.2f} ms (x{rec / plain:.3f})" if rec else ""))
    checks.add(f"{job}: step times measured", bool(plain and rec and prof),
               f"plain {plain}, profiler {prof}, recorded {rec}")
    if plain and rec:
        checks.add(f"{job}: recording overhead <= x{MAX_OVERHEAD}", rec / plain <= MAX_OVERHEAD,
                   f"x{rec / plain:.3f}", gpu_only=True)

    # Kernels attributed to ranges (CUPTI correlation).
    db = os.path.join(w, f"{job}.db")
    if os.path.exists(db):
        total, inside, timed = kernel_attribution(db, r["id"])
        entry["kernels"] = {"total": total, "in_a_range": inside, "ranges_with_device_time": timed}
        lines.append(f"\nkernels: {total}, {inside} launched inside a range; {timed} ranges with device time")
        checks.add(f"{job}: kernels attributed >= {MIN_ATTRIBUTED * 100:g}%",
                   total > 0 and inside / total >= MIN_ATTRIBUTED and timed > 0,
                   f"{inside} of {total} kernels, {timed} ranges timed", gpu_only=True)

    # Plans at three budgets, and their verifications.
    verdicts = verifications(db) if os.path.exists(db) else {}
    lines.append("\n| budget | memory | plan | predicted allocated | predicted reserved | verify | measured "
                 "allocated | measured reserved |\n|---|---|---|---|---|---|---|---|")
    entry["plans"] = []
    advised = 0
    for budget in args.budgets:
        tag = f"{job}-{budget.rstrip('%')}"
        plan = load_json(os.path.join(w, f"{tag}-plan.json"))
        if not plan:
            log = open(os.path.join(w, f"{tag}-advise.log")).read() if os.path.exists(
                os.path.join(w, f"{tag}-advise.log")) else ""
            why = "no plan fits" if "cannot be met" in log else "advise failed"
            lines.append(f"| {budget} | | {why} | | | | | |")
            entry["plans"].append({"budget": budget, "plan": None, "why": why})
            continue
        advised += 1
        p = plan["predicted"]
        verdict, v = verdicts.get(plan.get("plan_id"), (None, None))
        if not verdict:  # the plan was stored under another id: the verify log's own line
            try:
                verdict = next((l.split(":", 1)[1].strip() for l in open(os.path.join(w, f"{tag}-verify.log"))
                                if l.startswith("verdict:")), None)
            except OSError:
                pass
        m = v["measured"] if v else {}
        lines.append(f"| {budget} ({mib(plan['budget_bytes'])}) | {plan.get('budget_memory')} | "
                     f"{len(plan['checkpoint'])} segments, +{p['slowdown'] * 100:.1f}% | {mib(p['peak_bytes'])} | "
                     f"{mib(p.get('reserved_peak_bytes'))} | {verdict or 'not run'} | {mib(m.get('peak_bytes'))} | "
                     f"{mib(m.get('reserved_peak_bytes'))} |")
        entry["plans"].append({"budget": budget, "plan": plan.get("plan_id"), "predicted": p,
                               "budget_memory": plan.get("budget_memory"), "verdict": verdict,
                               "gates": v["gates"] if v else None})
        if verdict:
            failed = [g["name"] + ": " + g["detail"] for g in v["gates"] if not g["passed"]] if v else []
            checks.add(f"{tag}: verify", verdict == "PASS", "; ".join(failed) or "every gate passed",
                       gpu_only=verdict != "PASS")
    checks.add(f"{job}: advised", advised > 0, f"{advised} of {len(args.budgets)} budgets have a plan")


def attach_report(args, lines, doc):
    """The attached run as recorded (its failures are in failed.txt)."""
    try:
        run = json.load(open(os.path.join(args.work, "attach-show.json")))["runs"][-1]
        said = open(os.path.join(args.work, "attach.err")).read()
    except (OSError, ValueError, IndexError, KeyError):
        return
    cuda = re.search(r"cuda=(\w+)", said)
    doc["attach"] = {k: run.get(k) for k in ("status", "steps", "backend", "peak_bytes",
                                             "allocated_peak_bytes", "reserved_peak_bytes",
                                             "reserved_source")}
    doc["attach"]["cuda"] = cuda.group(1) if cuda else None
    lines.append(f"\n## attach\n\nrun {run.get('status')}, {run.get('steps')} steps, backend "
                 f"{run.get('backend')} (cuda={doc['attach']['cuda']}), allocated peak "
                 f"{mib(run.get('allocated_peak_bytes'))}, reserved peak "
                 f"{mib(run.get('reserved_peak_bytes'))} ({run.get('reserved_source')})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--build-note", default="")
    ap.add_argument("--build-s", type=int, default=0)
    ap.add_argument("--run-s", type=int, default=0)
    ap.add_argument("--jobs", nargs="+", required=True)
    ap.add_argument("--budgets", nargs="+", required=True)
    args = ap.parse_args()
    args.on_gpu = args.device == "cuda"
    checks = Checks(args.on_gpu)
    lines = [f"# gcprof gpu-check: {args.gpu}",
             f"\n{args.build_note}; build {args.build_s} s, runs {args.run_s} s, "
             f"total {args.build_s + args.run_s} s"]
    doc = {"gpu": args.gpu, "device": args.device, "build_s": args.build_s, "run_s": args.run_s, "jobs": []}
    for job in args.jobs:
        job_report(args, job, checks, lines, doc)
    attach_report(args, lines, doc)
    try:
        for l in open(os.path.join(args.work, "failed.txt")).read().splitlines():
            if l.strip():
                checks.add("run: " + l.split(":")[0], False, l)
    except OSError:
        pass
    failed = checks.failed()
    lines.append("\n## Checks\n")
    for name, state, detail in checks.rows:
        lines.append(f"- {state}: {name} ({detail})")
    lines.append(f"\nresult: {'PASS' if not failed else 'FAIL'}"
                 + ("" if args.on_gpu else " (dry run: plumbing only, GPU checks skipped)"))
    doc["checks"] = [{"name": n, "state": s, "detail": d} for n, s, d in checks.rows]
    doc["result"] = "PASS" if not failed else "FAIL"
    os.makedirs(args.out, exist_ok=True)
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "gpu-check-report.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "gpu-check-report.json"), "w") as f:
        json.dump(doc, f, indent=2)
    sys.stdout.write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What fits by resolution and sequence length: record a job of size_job.py
at a few image sides (or sequence lengths), predict the peak at a larger
size for none / every / optimal and the largest size that fits a budget,
then run those sizes with the plans (gcprof verify --size-arg) and compare.
Prints Markdown rows (exact bytes) for bench/RESULTS.md, "What fits by
resolution and sequence length".

    python3 bench/what_if/size_bench.py BUILD MODEL --arg image --sizes 64,96,128 --at 224 \\
        [--side] [--step 16] [--fit auto] [--budget 130%] [--job-args "--batch 4"] [--no-largest]

Each `--compare SIZES:OPTIONS` (e.g. `64,128:--side`, `64,96,128:--fit affine`)
also predicts none and every at --at from those recorded sizes with those
what-if options, against the same measured runs. The budget is a percentage
of the largest recorded size's peak, given to advise in bytes; `--headroom
0`, so that "fits" means below it.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JOB = os.path.join(ROOT, "bench/what_if/size_job.py")


def run(gcprof, *args, check=True):
    p = subprocess.run([gcprof, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise SystemExit(f"gcprof {' '.join(args)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def b(x):
    return f"{x:,} B ({x / 2**20:.2f} MiB)" if x is not None else "-"


def err(p, m):
    return f"{(p - m) / m * 100:+.2f}%" if p and m else "-"


class Bench:
    def __init__(self, a):
        self.a = a
        self.g = os.path.join(a.build, "bin", "gcprof")
        self.db = os.path.join(tempfile.mkdtemp(prefix="gcprof-size-bench-"), "trace.db")
        self.runs = {}

    def record(self):
        argv = [sys.executable, JOB, self.a.model, *shlex.split(self.a.job_args)]
        for s in self.sizes(self.a.sizes) | {int(x) for c in self.a.compare for x in c.split(":")[0].split(",")}:
            run(self.g, "record", "-o", self.db, "--name", f"{self.a.arg}={s}", "--", *argv, f"--{self.a.arg}", str(s))
        for r in json.loads(run(self.g, "show", self.db, "--json").stdout)["runs"]:
            if r["name"].startswith(self.a.arg + "="):
                self.runs[int(r["name"].split("=")[1])] = r
        top = self.runs[max(self.sizes(self.a.sizes))]["peak_bytes"]
        self.budget = int(top * float(self.a.budget.rstrip("%")) / 100)

    @staticmethod
    def sizes(text):
        return {int(x) for x in text.split(",")}

    def what_if(self, sizes, options, *extra):
        size_of = [f"--size-of={self.runs[s]['id']}={s}" for s in sorted(sizes)]
        return run(self.g, "advise", self.db, "--what-if", self.a.arg, *size_of, "--budget", f"{self.budget}B",
                   "--headroom", "0", *shlex.split(options), *extra, check=False)

    def options(self):
        o = f"--fit {self.a.fit}"
        if self.a.side:
            o += " --side"
        if self.a.step > 1:
            o += f" --size-step {self.a.step}"
        return o

    def measured(self, strategy, size):
        """Plan `strategy` for `size` (the main options), run it; (predicted, measured, plan units)."""
        plan = os.path.join(os.path.dirname(self.db), f"plan-{strategy}-{size}.json")
        if os.path.exists(plan):
            os.remove(plan)
        self.what_if(self.sizes(self.a.sizes), self.options(), "--size", str(size), "--strategy", strategy,
                     "-o", plan)
        if not os.path.exists(plan):
            return None, None, "-"
        segs = [s.get("module", f"{s.get('first')}-{s.get('last')}") for s in json.load(open(plan)).get("segments", [])]
        v = run(self.g, "verify", self.db, "--plan", plan, f"--size-arg=--{self.a.arg} {{size}}", check=False)
        rep = json.loads(run(self.g, "report", self.db, "--format", "json", check=False).stdout)
        if v.returncode not in (0, 1):
            print(f"<!-- verify {strategy} {size}: rc {v.returncode} {v.stderr[-300:]} -->")
        return rep["predicted"]["peak_bytes"], rep["measured"]["peak_bytes"], len(segs)

    def main(self):
        a = self.a
        self.record()
        w = json.loads(self.what_if(self.sizes(a.sizes), self.options(), "--json").stdout)
        print(f"\n#### {a.model} {a.job_args}: {a.arg} {a.sizes} recorded, `{self.options()}`; budget {a.budget} of "
              f"the {a.arg}={max(self.sizes(a.sizes))} peak = {b(self.budget)}; {w['fit']} fit\n")
        print("recorded peaks: " + ", ".join(f"{s}: {b(self.runs[s]['peak_bytes'])}" for s in sorted(self.runs)))
        print(f"\nfit check: {json.dumps(w['fit_check'])}\n")
        print(f"| strategy | predicted @{a.at} | measured @{a.at} (plan applied) | error | units checkpointed |")
        print("|---|---:|---:|---:|---:|")
        at = {}
        for s in ("none", "every", "optimal"):
            pr, me, n = self.measured(s, a.at)
            at[s] = me
            print(f"| {s} | {b(pr)} | {b(me)} | {err(pr, me)} | {n} |", flush=True)
        for c in a.compare:
            sizes, opts = c.split(":", 1)
            p = self.what_if(self.sizes(sizes), opts, "--size", str(a.at), "--strategy", "every", "--json")
            if p.returncode not in (0, 1):
                print(f"\ncompare {c}: advise rc {p.returncode}: {p.stderr.strip()[-300:]}")
                continue
            doc = json.loads(p.stdout)
            row = next(r for r in doc["what_if"]["table"] if r["size"] == a.at)
            pl = {x["strategy"]: x["peak_bytes"] for x in row["plans"]}
            print(f"\nfrom {a.arg} {sizes} with `{opts}` ({doc['what_if']['fit']}): none @{a.at} {b(pl['none'])} "
                  f"({err(pl['none'], at['none'])}), every {b(pl['every'])} ({err(pl['every'], at['every'])})",
                  flush=True)
        if a.no_largest:
            return
        print(f"\n| strategy | predicted largest {a.arg} | measured there | fits | next ({a.arg}+{a.step}) measured | "
              "next fits | true largest? |")
        print("|---|---:|---:|---|---:|---|---|")
        for l in w["largest"]:
            s, size = l["strategy"], l["size"]
            if s == "uniform" or size == 0:
                continue
            _, there, _ = self.measured(s, size)
            _, nxt, _ = self.measured(s, size + a.step)
            if nxt is None:
                _, nxt, _ = self.measured("every", size + a.step)
            fits = there is not None and there <= self.budget
            nfits = nxt is not None and nxt <= self.budget
            print(f"| {s} | {size} | {b(there)} | {'yes' if fits else 'NO'} | {b(nxt)} | {'YES' if nfits else 'no'} | "
                  f"{'yes' if fits and not nfits else 'NO'} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("model")
    ap.add_argument("--arg", default="image", help="the job's size option: image or seq")
    ap.add_argument("--sizes", default="64,96,128")
    ap.add_argument("--at", type=int, default=224)
    ap.add_argument("--side", action="store_true")
    ap.add_argument("--step", type=int, default=1)
    ap.add_argument("--fit", default="auto")
    ap.add_argument("--budget", default="130%")
    ap.add_argument("--job-args", default="")
    ap.add_argument("--compare", action="append", default=[])
    ap.add_argument("--no-largest", action="store_true")
    Bench(ap.parse_args()).main()


if __name__ == "__main__":
    main()

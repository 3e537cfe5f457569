#!/usr/bin/env python3
"""Recording overhead: median step time recorded / plain, for both samples, and
PyTorch's torch.profiler(profile_memory=True) on the same python job.

A step's time is measured from outside, without touching the job: each
configuration runs with S and L steps, and (T(L) - T(S)) / (L - S) is the time of
one step with start-up, model set-up and warm-up cancelled out. Each pair is
repeated and the median taken.

    python3 bench/record/record_overhead.py [--build build] [--repeats 5]

Prints a Markdown table (paste it into bench/RESULTS.md).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def wall(argv):
    t0 = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - t0


def step_time(make_argv, short, long, repeats):
    per_step = []
    for _ in range(repeats):
        per_step.append((wall(make_argv(long)) - wall(make_argv(short))) / (long - short))
    return statistics.median(per_step), min(per_step), max(per_step)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--short", type=int, default=2)
    ap.add_argument("--long", type=int, default=8)
    ap.add_argument("--layers", default="8")
    a = ap.parse_args()
    gcprof = os.path.join(a.build, "bin", "gcprof")
    tmp = tempfile.mkdtemp(prefix="gcprof-bench-")
    flags = ["--layers", a.layers]
    jobs = {
        "C++ gpt_train": [os.path.join(a.build, "bin", "gpt_train"), *flags],
        "python train_gpt.py": [sys.executable, os.path.join(ROOT, "samples/python/train_gpt.py"), *flags],
    }

    def recorded(argv):
        def make(steps):
            db = os.path.join(tmp, f"r{time.monotonic_ns()}.db")
            return [gcprof, "record", "-o", db, "--", *argv, "--steps", str(steps)]
        return make

    rows = []
    for name, argv in jobs.items():
        plain = step_time(lambda s, argv=argv: [*argv, "--steps", str(s)], a.short, a.long, a.repeats)
        rec = step_time(recorded(argv), a.short, a.long, a.repeats)
        rows.append((name, "gcprof record", plain, rec))
        if name.startswith("python"):
            driver = [sys.executable, os.path.join(ROOT, "bench/record/torch_profiler_driver.py"), *flags]
            prof = step_time(lambda s: [*driver, "--steps", str(s)], a.short, a.long, a.repeats)
            rows.append((name, "torch.profiler(profile_memory=True)", plain, prof))
    print(f"| job | recorder | plain step (s) | recorded step (s) | ratio |")
    print(f"|---|---|---|---|---|")
    for name, how, plain, rec in rows:
        print(f"| {name} | {how} | {plain[0]:.3f} ({plain[1]:.3f}-{plain[2]:.3f}) | "
              f"{rec[0]:.3f} ({rec[1]:.3f}-{rec[2]:.3f}) | {rec[0] / plain[0]:.3f} |")


if __name__ == "__main__":
    main()

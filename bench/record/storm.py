#!/usr/bin/env python3
"""The allocation storm, side by side: many threads doing nothing
but malloc/free of 4 KiB blocks (tests/inject/inject_probe.cpp `storm`), run
plain, under `gcprof record` (one or more builds of it) and under heaptrack,
in alternating rounds (the order of the modes changes from round to round,
side_by_side.turn_orders).

    python3 bench/record/storm.py [--build build] [--gcprof label=DIR ...]
                                  [--rounds 5] [--threads 8] [--per-thread 125000]

`--gcprof label=DIR` adds a gcprof build to compare (DIR holds bin/gcprof and
lib/libgcprof_inject.so, e.g. a copy of an older build/); without it, the
build under --build is the one measured. Per run: wall time, CPU time of the
whole process tree (user + system of every waited-for descendant, from
getrusage: the writer thread and heaptrack's interpreter count) and the
job's own peak RSS as it prints it. Medians per mode, and ratios to heaptrack
of the same round, are printed as a Markdown table.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import turn_orders  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run_once(cmd, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    out = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = next((int(l.split()[1]) for l in out.stdout.splitlines() if l.startswith("peak_rss_kib")), 0)
    return wall, cpu, rss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--gcprof", action="append", default=[], metavar="LABEL=DIR")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--per-thread", type=int, default=125000)
    ap.add_argument("--no-heaptrack", action="store_true")
    args = ap.parse_args()

    # Absolute: every run starts in a temporary folder (`make bench` passes build/).
    probe = os.path.join(os.path.abspath(args.build), "bin", "inject_probe")
    job = [probe, "storm", str(args.threads), str(args.per_thread)]
    builds = [(label, os.path.abspath(path)) for label, path in (g.split("=", 1) for g in args.gcprof)]
    builds = builds or [("gcprof", os.path.abspath(args.build))]
    modes = [("plain", lambda d: job)]
    for label, path in builds:
        gcprof = os.path.join(path, "bin", "gcprof")
        modes.append((label, lambda d, g=gcprof: [g, "record", "-o", os.path.join(d, "t.db"), "--"] + job))
    heaptrack = shutil.which("heaptrack")
    if heaptrack and not args.no_heaptrack:
        modes.append(("heaptrack", lambda d: [heaptrack, "-o", os.path.join(d, "ht")] + job))

    results = {name: [] for name, _ in modes}
    orders = turn_orders(len(modes))
    for r in range(args.rounds):
        # No mode always first, none always right after the same one.
        order = [modes[i] for i in orders[r % len(orders)]]
        line = []
        for name, make in order:
            with tempfile.TemporaryDirectory(prefix="gcprof-storm-") as d:
                wall, cpu, rss = run_once(make(d), d)
            results[name].append((wall, cpu, rss))
            line.append(f"{name} {wall:.2f}s/{cpu:.2f}s")
        print(f"round {r + 1}: " + ", ".join(line), flush=True)

    print(f"\n`inject_probe storm {args.threads} {args.per_thread}`, {args.rounds} rounds, "
          f"load average {os.getloadavg()[0]:.1f} at the end\n")
    ref = "heaptrack" if "heaptrack" in results else None
    print("| mode | wall (median) | CPU (median) | job peak RSS | wall / heaptrack | CPU / heaptrack | CPU per round |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, runs in results.items():
        wall = statistics.median(x[0] for x in runs)
        cpu = statistics.median(x[1] for x in runs)
        rss = statistics.median(x[2] for x in runs)
        if ref:
            rw = statistics.median(a[0] / b[0] for a, b in zip(runs, results[ref]))
            rc = statistics.median(a[1] / b[1] for a, b in zip(runs, results[ref]))
            ratios = f"{rw:.2f} | {rc:.2f}"
        else:
            ratios = "– | –"
        per_round = " ".join(f"{x[1]:.2f}" for x in runs)
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {rss:.1f} MB | {ratios} | {per_round} |")


if __name__ == "__main__":
    main()

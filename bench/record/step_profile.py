#!/usr/bin/env python3
"""Where gcprof's cost per step goes: perf samples of a free-running job's
steps, plain and under `gcprof record`, grouped by what they ran.

    python3 bench/record/step_profile.py [--build build] [--job py-gpt-short]
                                         [--pairs 4] [--first 60] [--last 480]

A run is never stopped (side_by_side.py's turns stop it after every step): it
trains --last + 40 steps at its own pace, and `perf record -F 2999 -p PID`
samples every thread of the job's process from the `step` line --first to
--last. Plain and gcprof runs alternate, --pairs of each; each group's ms a
step is the median over the runs. The groups (`group`): gcprof's writer
thread, the injector's hooks on the job's threads (libgcprof_inject), the
module hooks (gcprof_backward_hooks), clock reads (the vDSO), ctypes calls,
and the job's own code (everything else those threads ran, the python
shim's own python code included: it runs in the interpreter).

The first five are work that only gcprof does, and they are stable from run to
run (within ~0.05 ms). The job's own code is not: one process's pace differs
from another's by several percent, so its difference between plain and gcprof
(cache and allocator effects of ours, if any) is noise at this many runs; the
side-by-side harness measures the whole.
"""
import argparse
import collections
import os
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import JOBS, ROOT, command  # noqa: E402  (the same jobs, the same commands)

HZ = 2999
GCPROF_GROUPS = ("writer thread", "injector on the job's threads", "module hooks (C++)",
                 "clock reads (vDSO)", "ctypes calls")
OWN = "the job's own code"


def group(comm, dso):
    """What a sample of thread `comm` in object `dso` counts as."""
    if comm == "gcprof-writer":
        return "writer thread"
    if dso == "libgcprof_inject.so":
        return "injector on the job's threads"
    if dso.startswith("gcprof_backward_hooks"):
        return "module hooks (C++)"
    if dso == "[vdso]":
        return "clock reads (vDSO)"
    if dso.startswith("_ctypes") or dso.startswith("libffi"):
        return "ctypes calls"
    return OWN


def samples(data):
    """{group: samples} of a perf.data file."""
    out = subprocess.run(["perf", "report", "-i", data, "--sort", "comm,dso", "--stdio", "-n",
                          "-t", "\t"], capture_output=True, text=True, check=True).stdout
    groups = collections.Counter()
    for line in out.splitlines():
        fields = [f.strip() for f in line.split("\t")]
        if line.startswith("#") or len(fields) < 4 or not fields[1].isdigit():
            continue
        groups[group(fields[2], fields[3])] += int(fields[1])
    return groups


def run(argv, data, first, last, recorded):
    """Samples every thread of the job's process between steps first and last
    (recorded: the job is `gcprof record`'s child, argv runs gcprof)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    perf, step = None, -1
    for line in proc.stdout:
        if not line.startswith("step "):
            continue
        step += 1
        if step == first:
            pid = proc.pid
            if recorded:
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                    pid = int(f.read().split()[0])
            perf = subprocess.Popen(["perf", "record", "-q", "-F", str(HZ), "-p", str(pid), "-o", data],
                                    stderr=subprocess.DEVNULL)
        elif step == last and perf:
            perf.send_signal(signal.SIGINT)
            perf.wait()
    if proc.wait() != 0 or step < last:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode} after {step + 1} steps")
    return samples(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--job", default="py-gpt-short", choices=[j for j, s in JOBS.items() if s])
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--first", type=int, default=60)
    ap.add_argument("--last", type=int, default=480)
    a = ap.parse_args()
    steps = a.last - a.first
    per_step = {m: collections.defaultdict(list) for m in ("plain", "gcprof")}
    with tempfile.TemporaryDirectory(prefix="gcprof-steps-") as tmp:
        for p in range(a.pairs):
            for mode in ("plain", "gcprof"):
                argv = command(a.job, mode, a.build, a.last + 40, tmp, p)
                got = run(argv, os.path.join(tmp, "perf.data"), a.first, a.last, mode == "gcprof")
                for g in GCPROF_GROUPS + (OWN,):
                    per_step[mode][g].append(got[g] / steps / HZ * 1000)
                print(f"pair {p} {mode}: {sum(got.values()) / steps / HZ * 1000:.2f} ms a step",
                      file=sys.stderr)
    plain = statistics.median(per_step["plain"][OWN])
    print(f"{a.job}, steps {a.first}-{a.last} free-running, {a.pairs} runs of each, perf at {HZ} Hz; "
          f"ms a step (median over runs; % of plain's step)\n")
    print("| where | plain | gcprof | % of plain | gcprof per run |")
    print("|---|---:|---:|---:|---|")
    ours = 0.0
    for g in GCPROF_GROUPS + (OWN,):
        med = statistics.median(per_step["gcprof"][g])
        runs = " ".join(f"{x:.3f}" for x in per_step["gcprof"][g])
        share = ""
        if g != OWN:  # the job's own code: noise at this many runs (see above)
            ours += med
            share = f"{med / plain * 100:.1f}%"
        print(f"| {g} | {statistics.median(per_step['plain'][g]):.3f} | {med:.3f} | {share} | {runs} |")
    print(f"| gcprof's own work (the groups but the last) | | {ours:.3f} | {ours / plain * 100:.1f}% | |")


if __name__ == "__main__":
    main()

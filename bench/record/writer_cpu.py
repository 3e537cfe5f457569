"""The recorder's writer thread: its CPU per step of py-gpt-short under
`gcprof record`, free-running and stopped after each step for a while as
side_by_side.py's turns stop it (a block live past 50 ms by the clock is
written while live, profiler/inject/event_processor.h), builds alternating
round by round.

    python3 bench/record/writer_cpu.py --build main=/work/main/build \
        --build this=build --rounds 3 [--keep DIR]

Per thread CPU from /proc/<pid>/task/*/schedstat between steps --first and
--last; prints the medians over rounds of the writer's and the whole job's
ms per step. --keep DIR keeps each trace (DIR/<name>-<mode>-<round>.db).
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from side_by_side import JOB, JOBS, tree_threads  # noqa: E402


def run(gcprof, db, steps, first, last, stop_s):
    """(writer ms per step, job ms per step) between steps first and last."""
    argv = [gcprof, "record", "-o", db, "--", sys.executable, JOB, *JOBS["py-gpt-short"],
            "--steps", str(steps)]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    marks, step = {}, -1
    for line in proc.stdout:
        if not line.startswith("step "):
            continue
        step += 1
        if stop_s:
            os.killpg(proc.pid, signal.SIGSTOP)
        if step in (first, last):
            threads = list(tree_threads(proc.pid))
            marks[step] = (sum(ns for name, ns in threads if name == "gcprof-writer"),
                           sum(ns for _, ns in threads))
        if stop_s:
            time.sleep(stop_s)
            os.killpg(proc.pid, signal.SIGCONT)
    if proc.wait() != 0 or len(marks) != 2:
        raise RuntimeError(f"{' '.join(argv)}: exit {proc.returncode}, {step + 1} steps")
    n = last - first
    return tuple((b - a) / n / 1e6 for a, b in zip(marks[first], marks[last]))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", action="append", required=True, help="NAME=DIR holding bin/gcprof")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--first", type=int, default=50)
    p.add_argument("--last", type=int, default=290)
    p.add_argument("--stop-ms", type=float, default=70, help="how long each step's stop lasts")
    p.add_argument("--keep", help="keep the traces in this folder")
    a = p.parse_args()
    builds = [b.split("=", 1) for b in a.build]
    out = a.keep or tempfile.mkdtemp(prefix="writer_cpu_")
    os.makedirs(out, exist_ok=True)
    got = {}
    for r in range(a.rounds):
        order = builds if r % 2 == 0 else builds[::-1]
        for mode, stop in (("stopped", a.stop_ms / 1000), ("free", 0)):
            for name, build in order:
                db = os.path.join(out, f"{name}-{mode}-{r}.db")
                if os.path.exists(db):
                    os.remove(db)
                w, job = run(os.path.join(build, "bin", "gcprof"), db, a.steps, a.first, a.last, stop)
                got.setdefault((name, mode), []).append((w, job))
                load = os.getloadavg()[0]
                print(f"round {r} {mode:7} {name:6} writer {w:.3f} ms/step, job {job:.2f} ms/step "
                      f"(load {load:.2f})", flush=True)
    print(f"\nmedians over {a.rounds} rounds, steps {a.first}-{a.last}:")
    for (name, mode), v in sorted(got.items()):
        print(f"  {mode:7} {name:6} writer {statistics.median(x[0] for x in v):.3f} ms/step "
              f"({', '.join(f'{x[0]:.3f}' for x in v)}), job "
              f"{statistics.median(x[1] for x in v):.2f} ms/step")


if __name__ == "__main__":
    main()

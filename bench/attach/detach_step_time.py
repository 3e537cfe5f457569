#!/usr/bin/env python3
"""Step time of a job before `gcprof attach` and after it detached.

    python3 bench/attach/detach_step_time.py [--build build] [--rounds 3]
                                             [--steps 1500] [--attach-after 100]

A round starts two copies of the python GPT sample with short steps (8
layers, hidden 64, seq 32, batch 2: ~20 ms of CPU a step here, 85 module
calls, where a hook left behind would show) at once, one intra-op thread each: one is attached after --attach-after steps for 5 steps, then
detached; the other, the control, runs plainly beside it. Each step's CPU
time is read from outside, at each `step <i>` line the job prints (every
thread of the job, /proc/<pid>/task/*/schedstat): gdb runs outside the job,
and what detach leaves behind in the job (restored GOT slots, hooks removed,
the writer thread gone) is counted. A round's figure is, for each job, the
median CPU per step after detach (from 3 steps after it to the end) over the
median before attach (from step 3 on); the control's ratio is what the
machine's drift alone gives over the same step numbers.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "record"))
from side_by_side import tree_cpu_ns  # noqa: E402

JOB = [os.path.join(ROOT, "samples", "python", "train_gpt.py"),
       "--layers", "8", "--hidden", "64", "--heads", "4", "--seq", "32", "--batch", "2"]
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class StepClock:
    """Starts the job and keeps the job's CPU ns at each of its step lines."""

    def __init__(self, steps):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GCPROF_", "LD_PRELOAD"))}
        env.update(ONE_THREAD)
        self.proc = subprocess.Popen([sys.executable, *JOB, "--steps", str(steps)], env=env,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        self.cpu = []  # CPU ns at the end of step i
        self.seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith("step "):
                ns = tree_cpu_ns(self.proc.pid)
                with self.seen:
                    self.cpu.append(ns)
                    self.seen.notify_all()

    def wait_for_step(self, i):
        with self.seen:
            self.seen.wait_for(lambda: len(self.cpu) > i or self.proc.poll() is not None)
        return len(self.cpu) - 1

    def per_step(self, first, last):
        return [b - a for a, b in zip(self.cpu[first:last], self.cpu[first + 1:last + 1])]


def one_round(build, steps, attach_after, tmp):
    attached, control = StepClock(steps), StepClock(steps)
    attached.wait_for_step(attach_after)
    began = len(attached.cpu) - 1
    db = os.path.join(tmp, "attached.db")
    out = subprocess.run([os.path.join(build, "bin", "gcprof"), "attach", str(attached.proc.pid),
                          "-o", db, "--steps", "5"], capture_output=True, text=True, timeout=300)
    detached = len(attached.cpu) - 1
    for job in (attached, control):
        job.proc.wait(timeout=600)
        time.sleep(0.1)  # the reader thread's last line
    if out.returncode != 0:
        sys.exit("gcprof attach failed (%d): %s" % (out.returncode, out.stderr[-2000:]))
    last = len(attached.cpu) - 1
    if detached + 3 >= last - 5:
        sys.exit("the job ended %d steps after detach: raise --steps" % (last - detached))
    ratios = {}
    for name, job in (("attached", attached), ("control", control)):
        before = statistics.median(job.per_step(3, began))
        after = statistics.median(job.per_step(detached + 3, last))
        ratios[name] = (before, after, after / before)
    return began, detached, last, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--attach-after", type=int, default=100)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gcprof-detach-") as tmp:
        rows = []
        for r in range(a.rounds):
            began, detached, last, ratios = one_round(a.build, a.steps, a.attach_after, tmp)
            rows.append(ratios)
            print("round %d: attach at step %d, detached at %d, %d steps; " % (r + 1, began, detached, last + 1)
                  + "; ".join("%s %.2f -> %.2f ms CPU/step (x%.3f)" % (n, b / 1e6, f / 1e6, x)
                              for n, (b, f, x) in ratios.items()), flush=True)
    for name in ("attached", "control"):
        xs = [row[name][2] for row in rows]
        print("%s: after/before median x%.3f (rounds %s)" % (name, statistics.median(xs),
                                                         ", ".join("%.3f" % x for x in xs)))


if __name__ == "__main__":
    main()

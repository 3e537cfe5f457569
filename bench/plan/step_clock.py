#!/usr/bin/env python3
"""Runs a python training script and writes the wall and process CPU time of
each optimizer step, its kernel share and its minor page faults, to a JSON
file (the slowdown bench).

    step_clock.py OUT.json SCRIPT.py [ARGS...]

The job runs as __main__ with one intra-op thread (torch.set_num_threads(1)):
on a shared machine a second thread mostly measures the neighbours. A step
ends at each optimizer step (a global post-hook); the first interval starts
at import and is dropped by the bench. CPU time (time.process_time) is the
less noisy measure there: another process's work does not count in it.
Works with and without gcprof (a recording, `gcprof apply`, GCPROF_PLAN):
gcprof's shim applies a plan at import, before the script builds its model.
"""
import atexit
import json
import resource
import runpy
import sys
import time


def main():
    out, sys.argv = sys.argv[1], sys.argv[2:]
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    torch.set_num_threads(1)
    def mark():
        use = resource.getrusage(resource.RUSAGE_SELF)
        return time.perf_counter_ns(), time.process_time_ns(), int(use.ru_stime * 1e9), use.ru_minflt

    marks = [mark()]
    register_optimizer_step_post_hook(lambda opt, args, kwargs: marks.append(mark()))

    def dump():
        steps = [{"wall_ns": b[0] - a[0], "cpu_ns": b[1] - a[1], "sys_ns": b[2] - a[2],
                  "page_faults": b[3] - a[3]} for a, b in zip(marks, marks[1:])]
        with open(out, "w") as f:
            json.dump(steps, f)

    atexit.register(dump)
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()

"""Runs a python training script the way the side-by-side benchmark needs it:
one intra-op thread (the machine is shared; more threads would only measure
the neighbours), optionally inside torch.profiler(profile_memory=True), the
yardstick the issue compares against.

    python3 bench/record/job.py [--torch-profiler] SCRIPT [SCRIPT ARGS...]

The script itself is unchanged: it prints `step <i> ...` once per step and
side_by_side.py times those lines from outside.
"""
import runpy
import sys

import torch


def main():
    argv = sys.argv[1:]
    profiled = bool(argv) and argv[0] == "--torch-profiler"
    if profiled:
        argv = argv[1:]
    if not argv:
        sys.exit("job.py: name the training script to run")
    torch.set_num_threads(1)
    sys.argv = argv
    if not profiled:
        runpy.run_path(argv[0], run_name="__main__")
        return
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True):
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main()

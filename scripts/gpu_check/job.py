#!/usr/bin/env python3
"""Runs one training script for scripts/gpu-check, as `python3 SCRIPT ARGS...`
would, and afterwards prints PyTorch's own device peaks of the same process:

    gpu-check torch-peaks allocated=<bytes> reserved=<bytes> requested=<bytes>

(only when the job used CUDA), to compare with what gcprof recorded.

    job.py [--profiler] SCRIPT [ARGS...]

--profiler runs the whole script under torch.profiler (CPU and, when there
is one, CUDA activities), the overhead gcprof is compared with side by side.
"""
import runpy
import sys


def main():
    argv = sys.argv[1:]
    profiler = False
    if argv and argv[0] == "--profiler":
        profiler, argv = True, argv[1:]
    if not argv:
        print("usage: job.py [--profiler] SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    import torch

    script, sys.argv = argv[0], argv
    code = 0
    try:
        if profiler:
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU]
            if torch.cuda.is_available():
                acts.append(ProfilerActivity.CUDA)
            with profile(activities=acts):
                runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        # requested: the sizes asked for (what the allocator's trace entries
        # carry); allocated counts whole (rounded, unsplit) blocks.
        requested = torch.cuda.memory_stats().get("requested_bytes.all.peak", -1)
        print("gpu-check torch-peaks allocated=%d reserved=%d requested=%d"
              % (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(), requested),
              flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())

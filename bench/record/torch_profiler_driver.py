"""Runs samples/python/train_gpt.py under PyTorch's own profiler with memory
profiling on (the yardstick of the recording-overhead benchmark):

    python3 torch_profiler_driver.py [train_gpt.py flags]
"""
import os
import runpy
import sys

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "samples", "python", "train_gpt.py")

if __name__ == "__main__":
    sys.argv = [TRAIN, *sys.argv[1:]]
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True):
        runpy.run_path(TRAIN, run_name="__main__")

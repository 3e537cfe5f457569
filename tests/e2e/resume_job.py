"""A small deterministic training job that resumes its own paused recording
in the middle of a step: after step --resume-at's forward, before its
backward, it runs `gcprof ctl <trace> resume` and waits until the injector
records again. Prints `step <i> loss <value>` like the samples."""
import argparse
import ctypes
import os
import subprocess
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--gcprof", required=True)
parser.add_argument("--resume-at", type=int, default=1)
parser.add_argument("--steps", type=int, default=4)
args = parser.parse_args()

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(128, 128), torch.nn.ReLU())])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(512, 128)


def resume_recording():
    subprocess.run([args.gcprof, "ctl", os.environ["GCPROF_DB"], "resume"], check=True)
    active = ctypes.CDLL(None).gcprof_inject_active
    deadline = time.monotonic() + 60
    while not active():  # the injector's writer polls the .ctl file
        if time.monotonic() > deadline:
            raise SystemExit("the recording did not resume within 60 s")
        time.sleep(0.01)


for step in range(args.steps):
    loss = model(data).pow(2).mean()
    if step == args.resume_at:
        resume_recording()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.6f}", flush=True)

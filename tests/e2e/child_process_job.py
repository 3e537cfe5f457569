"""A small deterministic training job with the helper processes real jobs
have: a DataLoader with worker processes (fork, spawn or forkserver) whose
dataset calls a module (torchvision's transforms are modules), a data-prep
subprocess that runs a model before training, and Ctrl-C. Prints `step <i>
loss <value>` like the samples, and the python signal handlers it starts
with (`signals SIGINT=<...> SIGTERM=<...>`)."""
import argparse
import os
import signal
import subprocess
import sys

import torch
from torch import nn


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, width, transform):
        self.n, self.width = n, width
        self.transform = nn.Identity() if transform else (lambda x: x)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return self.transform(torch.randn(self.width, generator=g))


def prepare():
    """A data-prep step in its own process: it runs a module, and imports torch."""
    code = ("import torch; m = torch.nn.Linear(8, 8); "
            "print('prepared', m(torch.ones(2, 8)).shape[0])")
    subprocess.run([sys.executable, "-c", code], check=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--loader", choices=["none", "fork", "spawn", "forkserver"], default="none")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--prep", action="store_true", help="run a data-prep subprocess first")
    p.add_argument("--transform", action="store_true",
                   help="the dataset calls its transform module here too (no workers)")
    p.add_argument("--interrupt", choices=["none", "caught", "uncaught"], default="none",
                   help="send ourselves SIGINT after the last step")
    p.add_argument("--steps", type=int, default=3)
    a = p.parse_args()
    print("signals SIGINT=%s SIGTERM=%s" % (signal.getsignal(signal.SIGINT),
                                            signal.getsignal(signal.SIGTERM)), flush=True)
    if a.prep:
        prepare()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    width, batch = 256, 8
    model = nn.Sequential(*[m for _ in range(3) for m in (nn.Linear(width, width), nn.ReLU())])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = Tokens(batch * a.steps, width, transform=a.transform or a.loader != "none")
    kw = {}
    if a.loader != "none":
        kw = {"num_workers": a.workers, "multiprocessing_context": a.loader}
    loader = torch.utils.data.DataLoader(data, batch_size=batch, **kw)
    try:
        for step, x in enumerate(loader):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"step {step} loss {loss.item():.6f}", flush=True)
        if a.interrupt != "none":
            os.kill(os.getpid(), signal.SIGINT)
            signal.pause()  # KeyboardInterrupt ends it (a handler of ours would have killed it)
    except KeyboardInterrupt:
        if a.interrupt == "uncaught":
            raise
        print("interrupted: checkpoint saved", flush=True)
        return 5
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A small convolutional classifier trained at a given image side (random
weights and images, nothing downloaded): the job of the what-if by
resolution test (test_what_if.py). Its activations grow with the pixels,
side^2. Prints `step <i> loss <value>` like the samples.

    image_job.py --image PX [--batch B] [--steps N]
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.conv = nn.Conv2d(a, b, 3, padding=1)
        self.norm = nn.BatchNorm2d(b)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


class Net(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.blocks = nn.ModuleList([Block(3, width)] + [Block(width, width) for _ in range(3)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(dim=(2, 3)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    for step in range(a.steps):
        x = torch.randn(a.batch, 3, a.image, a.image, generator=gen)
        loss = F.cross_entropy(model(x), torch.randint(0, 10, (a.batch,), generator=gen))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()

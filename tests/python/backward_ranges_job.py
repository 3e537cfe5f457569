"""A job whose backward ranges meet every rule of backward_ranges.py's docstring.

Run under the fake recorder by test_native_hooks.py, once with the C++
backward hooks and once with the python ones: the events must be equal.
Each case trains one step with its own model; it prints nothing.
"""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from tiny_model import train


class TwoOutputs(nn.Module):
    """Two outputs, an Identity (zero-length range), an in-place ReLU."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)
        self.same = nn.Identity()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = self.act(self.a(x))
        return self.same(h), self.b(h)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(4, 8)  # input without grad_fn: its own small subgraph
        self.pair = TwoOutputs()
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        u, v = self.pair(self.stem(x))
        w = checkpoint(self.block, u + v, use_reentrant=False)
        return self.head(w)


def shapes_and_losses():
    torch.manual_seed(0)
    model = Model()
    loss_fn = nn.MSELoss()  # called at top level with the model's output itself
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        x = torch.randn(3, 4)
        out = model(x)
        loss = loss_fn(out, torch.zeros_like(out))
        opt.zero_grad(set_to_none=True)
        loss.backward(retain_graph=True)
        loss.backward()  # a second pass through the retained graph records nothing new
        opt.step()
    # A graph dropped without backward leaves nothing open.
    model(torch.randn(3, 4))


if __name__ == "__main__":
    shapes_and_losses()
    train(steps=2, layers=2)

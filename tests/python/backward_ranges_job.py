"""A job whose backward ranges meet every rule of backward_ranges.py's docstring,
and whose module calls meet every way forward_hooks.cpp hands a call to python.

Run under the fake recorder by test_native_hooks.py with the C++ hooks, with
the python forward hooks (C++ backward) and with the python ones: the events
must be equal. Each case trains one step with its own model; it prints nothing.
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


class Tagged(torch.Tensor):
    """A tensor subclass: its walk is left to python (tensors.py)."""


class Pairs(tuple):
    """A tuple subclass: likewise."""


class Takes(nn.Module):
    """Adds whatever tensors it is given, wherever they are; returns a container."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.lin = nn.Linear(8, 8)

    def forward(self, *args, **kwargs):
        tensors = []

        def collect(v):
            if isinstance(v, torch.Tensor):
                tensors.append(v)
            elif isinstance(v, (tuple, list)):
                for x in v:
                    collect(x)
            elif isinstance(v, dict):
                for x in v.values():
                    collect(x)
        collect(args)
        collect(kwargs)
        h = self.lin(sum(t.as_subclass(torch.Tensor) for t in tensors))
        if self.kind == "dict":
            return {"h": h, "n": len(tensors), "deep": [(h * 2,)]}
        if self.kind == "list":
            return [h, None, 3]
        return h


class Arguments(nn.Module):
    """Every shape of module arguments and results the hooks walk."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(4, 8)
        self.plain = Takes("tensor")
        self.nested = Takes("dict")
        self.keyword = Takes("list")
        self.subclass = Takes("tensor")
        self.parameter = Takes("tensor")
        self.frozen = Takes("tensor")

    def forward(self, x):
        h = self.stem(x)
        a = self.plain(h, 3, None, "text")
        b = self.nested((a, [h, {"k": a}]), {"x": (h,)})["deep"][0][0]
        c = self.keyword(h, scale=b, extra={"y": a})[0]  # kwargs: tensors and a dict
        d = self.keyword(other=c)[0]  # keyword inputs only
        e = self.subclass(d.as_subclass(Tagged))
        f = self.nested(Pairs((e, h)))["h"]
        g = self.parameter(self.stem.weight.sum() + f)
        with torch.no_grad():
            self.frozen(g)
        return g


def forward_arguments():
    torch.manual_seed(0)
    model = Arguments()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        loss = model(torch.randn(3, 4)).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


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
    forward_arguments()
    train(steps=2, layers=2)

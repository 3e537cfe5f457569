"""A forward that raises, then training goes on: the failed call's ranges are
closed and later calls nest as before. PyTorch 1.13 calls no forward hook of a
call whose forward raised (no always_call); this torch is made to look like it
by refusing the hook's keyword arguments, so the shim takes its 1.13 path."""
import sys

import torch
import torch.nn as nn

from harness import SHIM

sys.path.insert(0, SHIM)
from fake_recorder import FakeRecorder, ranges  # noqa: E402
from gcprof import startup  # noqa: E402

_register = torch.nn.modules.module.register_module_forward_hook


def _without_always_call(hook, **kwargs):
    if kwargs:
        raise TypeError("register_module_forward_hook() got an unexpected keyword argument")
    return _register(hook)


torch.nn.modules.module.register_module_forward_hook = _without_always_call
REC = FakeRecorder()
startup.install_profiler(torch, REC)


class Flaky(nn.Module):
    def __init__(self):
        super().__init__()
        self.fail = False
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        x = self.lin(x)
        if self.fail:
            raise ValueError("a bad batch")
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = Flaky()
        self.c = nn.Linear(4, 1)

    def forward(self, x):
        return self.c(self.b(self.a(x)))


def train_step(model, opt):
    opt.zero_grad(set_to_none=True)
    model(torch.randn(2, 4)).sum().backward()
    opt.step()


def test_the_shim_takes_the_path_without_always_call():
    assert any(h.__func__.__name__ == "_pre_without_always_call"
               for h in torch.nn.modules.module._global_forward_pre_hooks.values()
               if hasattr(h, "__func__"))


def test_ranges_close_and_nest_after_a_forward_that_raised():
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    REC.events.clear()
    train_step(model, opt)
    model.b.fail = True
    try:
        model(torch.randn(2, 4))
        raise AssertionError("the forward did not raise")
    except ValueError:
        pass
    model.b.fail = False
    train_step(model, opt)
    train_step(model, opt)
    rs = ranges(REC.events)
    assert all(r["end"] is not None for r in rs), [r for r in rs if r["end"] is None]
    roots = [r for r in rs if r["name"] == "" and r["phase"] == 1]
    assert len(roots) == 4, roots
    # Every root forward starts with nothing open: each is a root call again.
    for r in roots:
        assert not any(o["start"] < r["start"] < o["end"] for o in rs if o is not r), r
    # Every forward range lies inside its parent's.
    fwd = [r for r in rs if r["phase"] == 1]
    for r in fwd:
        if r["name"] == "":
            continue
        parent = r["name"].rsplit(".", 1)[0] if "." in r["name"] else ""
        around = [p for p in fwd if p["name"] == parent and p["start"] < r["start"]]
        assert around and r["end"] < around[-1]["end"], r
    # The steps go on: the two training steps after the failure are steps of their own.
    steps = [r["step"] for r in roots]
    assert steps[-1] == steps[-2] + 1, steps

"""A model whose module tree changes between training steps, in the ways that
bypass the module registration hooks; prints one line per step: `ok <what>`
when every module call was recorded under its name in the tree as it is now,
else `wrong <what>: recorded ... expected ...` (test_native_hooks.py)."""
import torch
import torch.nn as nn

import fake_recorder
from gcprof import startup

rec = fake_recorder.FakeRecorder()
startup.install_profiler(torch, rec)


class Tail(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8), nn.Tanh()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


torch.manual_seed(0)
shared = nn.Linear(8, 8)
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), Tail(), shared)
x = torch.randn(2, 8)


called = []
torch.nn.modules.module.register_module_forward_pre_hook(lambda m, args: called.append(m))


def step(what):
    rec.events.clear()
    called.clear()
    model(x).sum().backward()
    recorded = sorted(e[2] for e in rec.events if e[0] == "start" and e[3] == 1)
    names = {id(m): n for n, m in model.named_modules()}
    expected = sorted(names[id(m)] for m in called)
    print(("ok %s" % what) if recorded == expected else
          "wrong %s: recorded %s expected %s" % (what, recorded, expected), flush=True)


step("first call")
step("unchanged")
model[0] = nn.Linear(8, 8)
step("a child replaced")
del model[1]
step("a child deleted (the later ones renumbered)")
model[1].blocks.insert(0, nn.Linear(8, 8))
step("ModuleList.insert")
model._modules["extra"] = model._modules.pop("2")
step("a key renamed in _modules")
model._modules["again"] = shared
step("a module added twice (named once)")
tail = model._modules.pop("1")
model._modules["1"] = tail
step("keys reordered")
step("unchanged again")

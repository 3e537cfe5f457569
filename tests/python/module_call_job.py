"""backward_ranges_job.py with the job's own module hooks, or detached at the end.

argv[1]:
  direct        as it is: gcprof's hooks are the only ones (module_call.py's
                Module.__call__ calls them directly); then failsafe.remove_all():
                Module.__call__ and the hook registries must be torch's again
  global-hook   the job registers a global forward pre-hook and forward hook
                of its own: every call goes through torch's dispatch
  module-hooks  the job hooks every other module of its own: calls of those
                go through torch's dispatch, the rest directly
  fx-trace      no job: torch.fx traces a module twice, a module is called
                between and after: Module.__call__ must be gcprof's C one
                again after a call, and detaching must still restore torch's
  compile       no job: torch.compile of a model that calls sub-modules with
                a graph break inside (Dynamo then guards on
                Module.__dict__['__call__'].__closure__), three steps
Prints the job hooks' call counts and which Module.__call__ ran.
"""
import os
import runpy
import sys

import torch
import torch.nn.modules.module as registry

HERE = os.path.dirname(os.path.abspath(__file__))
mode = sys.argv[1]
torch_call = torch.nn.Module._wrapped_call_impl
calls = {"pre": 0, "post": 0}


def pre(module, args):
    calls["pre"] += 1


def post(module, args, output):
    calls["post"] += 1


if mode == "global-hook":
    registry.register_module_forward_pre_hook(pre)
    registry.register_module_forward_hook(post)
if mode == "module-hooks":
    original_init = torch.nn.Module.__init__
    created = [0]

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        created[0] += 1
        if created[0] % 2:
            self.register_forward_pre_hook(pre)
            self.register_forward_hook(post)
    torch.nn.Module.__init__ = init

print("call", torch.nn.Module.__call__.__module__)
print("installed", type(torch.nn.Module.__dict__["__call__"]).__name__)
if mode == "fx-trace":
    # FX's tracer saves Module.__call__ and sets it back when done: what it
    # saw is module_call.py's python function.
    def installed():
        return type(torch.nn.Module.__dict__["__call__"]).__name__
    torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2)))
    print("after-trace", installed())
    torch.nn.Linear(2, 2)(torch.randn(1, 2))
    print("after-a-call", installed())
    torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2)))
elif mode == "compile":
    class Inner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x, scale=1.0):
            torch._dynamo.graph_break()
            return self.lin(x) * scale

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.inner2 = Inner()

        def forward(self, x):
            return self.inner2(self.inner(x, scale=2.0)).relu().sum()

    model = torch.compile(Outer())
    for step in range(3):
        model(torch.randn(4, 8)).backward()
    print("compiled", "trained")
else:
    runpy.run_path(os.path.join(HERE, "backward_ranges_job.py"), run_name="__main__")
print("hooks", calls["pre"], calls["post"])
if mode in ("direct", "fx-trace"):
    from gcprof import failsafe
    failsafe.remove_all()
    dicts = ("_global_forward_pre_hooks", "_global_forward_hooks",
             "_global_forward_hooks_always_called", "_global_forward_hooks_with_kwargs")
    print("detached", torch.nn.Module.__dict__["__call__"] is torch_call,
          [len(getattr(registry, n)) for n in dicts])

#!/usr/bin/env python3
"""The python shim's cost per module call, measured inside one recorded process.

    gcprof record -o /tmp/h.db -- python3 bench/record/hook_cost.py [--model linears|gpt]
                                      [--pairs 15] [--count]

Side-by-side runs of whole processes cannot resolve a few percent on a shared
machine. Here one recorded process alternates training steps with the shim's
module hooks on and off (the global forward hooks are taken out of torch's
registry and put back; the backward node hooks are armed by the forward hook,
so they go with it) and reads the training thread's CPU time of each step:
adjacent steps see the same load. Per pair, (on - off) / module calls of a
step; the median over pairs is printed, with the median step ratio on / off.

The order inside a pair alternates (on-off, off-on) so that a drift favours
neither side. Steps with hooks off are not recorded as steps (no module ranges,
no step marker); allocations are recorded either way.

--count runs one hooks-on step under cProfile and prints, per module call, the
python-level calls (functions and builtins cProfile sees) and the calls into
the injector (ctypes), against a hooks-off step.

Models: `linears` = 200 x Linear(8, 8) + ReLU at batch 1 (nothing but hooks:
the worst case); `gpt` = samples/python/train_gpt.py's model, 4 layers, hidden
128, batch 8 (the side-by-side job py-gpt).
"""
import argparse
import cProfile
import ctypes
import os
import pstats
import statistics
import sys
import time

import torch
import torch.nn.modules.module as registry

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_HOOK_DICTS = ("_global_forward_pre_hooks", "_global_forward_hooks",
               "_global_forward_hooks_always_called", "_global_forward_hooks_with_kwargs")


class Hooks:
    """Takes the global module hooks out of torch's registry and puts them back.

    Also times the shim's end-of-step hook (an optimizer post hook: loss, the
    fingerprints), which runs only after a step the module hooks opened, so
    that its cost is reported apart from the per-module-call cost.
    """

    def __init__(self):
        self._saved = {n: dict(getattr(registry, n)) for n in _HOOK_DICTS if hasattr(registry, n)}
        if not self._saved.get("_global_forward_pre_hooks"):
            sys.exit("hook_cost.py: no global module hooks: run it under `gcprof record`")
        self.step_end_ns = 0
        import torch.optim.optimizer as optim
        posts = optim._global_optimizer_post_hooks
        for key, fn in list(posts.items()):
            posts[key] = self._timed(fn)

    def _timed(self, fn):
        def timed(*args):
            start = time.thread_time_ns()
            try:
                return fn(*args)
            finally:
                self.step_end_ns += time.thread_time_ns() - start
        return timed

    def on(self):
        for n, saved in self._saved.items():
            getattr(registry, n).update(saved)

    def off(self):
        for n in self._saved:
            getattr(registry, n).clear()


def build(name):
    torch.manual_seed(0)
    if name == "linears":
        layers = []
        for _ in range(100):
            layers += [torch.nn.Linear(8, 8), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers)
        x = torch.randn(1, 8)
        return model, lambda: model(x).square().sum()
    sys.path.insert(0, os.path.join(ROOT, "samples", "python"))
    import train_gpt
    args = train_gpt.parse_args(["--layers", "4", "--hidden", "128", "--heads", "4",
                                 "--batch", "8"])
    model = train_gpt.build_model(args)
    gen = train_gpt.data_generator(args)
    inputs, targets = train_gpt.make_batch(args, gen)
    return model, lambda: torch.nn.functional.cross_entropy(
        model(inputs).reshape(-1, args.vocab), targets.reshape(-1))


def module_calls(model, loss_fn):
    """Module forward calls in one step (counted with a hook of our own)."""
    count = [0]
    handle = registry.register_module_forward_pre_hook(lambda m, a: count.__setitem__(0, count[0] + 1))
    try:
        loss_fn()
    finally:
        handle.remove()
    return count[0]


def step(model, opt, loss_fn):
    start = time.thread_time_ns()
    opt.zero_grad(set_to_none=True)
    loss = loss_fn()
    loss.backward()
    opt.step()
    return time.thread_time_ns() - start


class CountingCalls:
    """Counts calls into the injector: wraps every ctypes function the shim bound."""

    def __init__(self):
        import gc
        from gcprof import native
        self.count = 0
        recs = [o for o in gc.get_objects() if isinstance(o, native.InjectorRecorder)]
        if not recs:
            sys.exit("hook_cost.py --count: no injector recorder in this process")
        for rec in recs:
            for attr, value in list(vars(rec).items()):
                if isinstance(value, ctypes._CFuncPtr):
                    setattr(rec, attr, self._wrap(value))

    def _wrap(self, fn):
        def counted(*args):
            self.count += 1
            return fn(*args)
        return counted


def profile_calls(model, opt, loss_fn):
    prof = cProfile.Profile()
    prof.enable()
    step(model, opt, loss_fn)
    prof.disable()
    return pstats.Stats(prof).total_calls


def count(model, opt, loss_fn, hooks, calls):
    counter = CountingCalls()
    per = {}
    for state in ("on", "off"):
        getattr(hooks, state)()
        step(model, opt, loss_fn)  # warm
        before = counter.count
        python = profile_calls(model, opt, loss_fn)
        per[state] = (python, counter.count - before)
    hooks.on()
    py = (per["on"][0] - per["off"][0]) / calls
    native = (per["on"][1] - per["off"][1]) / calls
    print(f"per module call: {py:.1f} python-level calls (cProfile, hooks on - off), "
          f"{native:.2f} calls into the injector")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("linears", "gpt"), default="linears")
    ap.add_argument("--pairs", type=int, default=15)
    ap.add_argument("--count", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    model, loss_fn = build(a.model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    hooks = Hooks()
    calls = module_calls(model, loss_fn)
    for _ in range(3):
        step(model, opt, loss_fn)
    if a.count:
        count(model, opt, loss_fn, hooks, calls)
        return
    per_call, ratio, step_end, off = [], [], [], []
    for i in range(a.pairs):
        order = ("on", "off") if i % 2 == 0 else ("off", "on")
        t = {}
        for state in order:
            getattr(hooks, state)()
            hooks.step_end_ns = 0
            t[state] = step(model, opt, loss_fn)
            if state == "on":
                end_ns = hooks.step_end_ns
        per_call.append((t["on"] - end_ns - t["off"]) / calls / 1000)
        ratio.append((t["on"] - end_ns) / t["off"])
        step_end.append(end_ns / t["off"])
        off.append(t["off"] / 1e6)
    hooks.on()
    q = statistics.quantiles(per_call, n=4)
    print(f"{a.model}: {calls} module calls per step, step without hooks "
          f"{statistics.median(off):.1f} ms (thread CPU, median of {a.pairs} pairs)\n"
          f"  module hooks per module call (fwd+bwd): median {statistics.median(per_call):.1f} us "
          f"(quartiles {q[0]:.1f}-{q[2]:.1f}); step with module hooks / without: "
          f"{statistics.median(ratio):.3f}\n"
          f"  end-of-step hook (loss, fingerprints): +{100 * statistics.median(step_end):.1f}% of a step")


if __name__ == "__main__":
    main()

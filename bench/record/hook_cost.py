#!/usr/bin/env python3
"""The python shim's cost per module call, measured inside one recorded process.

    gcprof record -o /tmp/h.db -- python3 bench/record/hook_cost.py [--model linears|gpt]
                                      [--pairs 15] [--count] [--split] [--compare DIR]

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

--compare DIR installs a second shim (another checkout's profiler/python, e.g.
`git archive OLD profiler/python | tar -x -C /tmp/old`) in the same process;
the rounds then rotate through this shim, that one and no hooks, so that two
versions are compared step by step under the same load.

--split adds a state with this shim's forward hooks but no backward ranges
(its backward arming turned off): the difference to the full shim in the same
round is what the backward node hooks cost (registration and dispatch).

The end-of-step hook is timed as a whole and its fingerprints apart.
Fingerprints run on a schedule of steps (gcprof/fingerprints.py): the median
is a step without them, the mean counts them in.

With the C++ backward hooks in use (profiler/backward_hooks), --split also
rotates in the state "python backward hooks": this shim with its backward
ranges on the python path (backward_ranges.py) for that step, so that the two
paths are compared step by step in one process.

With the C++ forward hooks in use too (forward_hooks.cpp), --split rotates in
"python forward hooks" (module_ranges.py's own _pre/_post, C++ backward), and
the states "forward-only" and "python backward hooks" run with the python
forward hooks (the C++ ones arm in C++, which the bench cannot turn off), so
"python forward hooks" - "this shim" is what moving the forward side to C++
saves per module call, step by step in one process. --count counts both.
It also rotates in "C++ forward alone": this shim as "on" (direct call, C++
forward hooks) with the C++ backward arming switched off (the extension's
disable/install): "on" - that is what the backward ranges cost per module
call (arming at the forward's end, node hooks in the backward pass).

--count runs one hooks-on step under cProfile and prints, per module call, the
python-level calls (functions and builtins cProfile sees) and the calls into
the injector (ctypes), against a hooks-off step.

With module_call.py's Module.__call__ installed (the C++ hooks called
without torch's hook dispatch), only the state "on" calls through it; "off"
and the others run torch's own Module.__call__. --dispatch rotates in the
state "torch dispatch": this shim's hooks called by torch's Module.__call__
(as before module_call.py), so "torch dispatch" - "this shim" is what the
direct call saves per module call, step by step in one process. When the
direct call is the C one (module_call.cpp), --dispatch also rotates in
"python call": module_call.py's python __call__ (what its descriptor gives),
so that "python call" - "this shim" is what the C call saves.

Models: `linears` = 200 x Linear(8, 8) + ReLU at batch 1 (nothing but hooks:
the worst case); `gpt` = samples/python/train_gpt.py's model, 4 layers, hidden
128, batch 8 (the side-by-side job py-gpt); `gpt2`, `vit`, `resnet18`: the
public-model jobs of side_by_side.py, same sizes; `gpt-short`: train_gpt.py's
model at 8 layers, hidden 64, seq 32, batch 2 (side_by_side.py's py-gpt-short:
a few ms a step, the launch-bound shape where the cost per module call is
what a GPU user pays).
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


FORWARD_ONLY = "forward-only"  # this shim's module hooks without arming backward ranges
PYTHON_BACKWARD = "python-backward"  # this shim with the python backward hooks instead of C++
PYTHON_FORWARD = "python-forward"  # this shim with its python forward hooks instead of C++
TORCH_DISPATCH = "torch-dispatch"  # this shim's hooks called by torch's Module.__call__
CPP_FORWARD_ONLY = "cpp-forward-only"  # "on" with the C++ backward arming switched off
PYTHON_CALL = "python-call"  # "on" through module_call.py's python Module.__call__
_ON_VARIANTS = (FORWARD_ONLY, PYTHON_BACKWARD, PYTHON_FORWARD)  # "on"'s hooks, changed
_DIRECT = ("on", CPP_FORWARD_ONLY)  # the states that call through the installed __call__

_PUBLIC = {
    "gpt2": ["--model", "gpt2", "--layers", "4", "--hidden", "128", "--seq", "256", "--batch", "8"],
    "vit": ["--model", "vit", "--layers", "4", "--image", "224", "--batch", "4", "--hidden", "128"],
    "resnet18": ["--model", "resnet18", "--image", "224", "--batch", "4"],
}

_GPT = {
    "gpt": ["--layers", "4", "--hidden", "128", "--heads", "4", "--batch", "8"],
    "gpt-short": ["--layers", "8", "--hidden", "64", "--heads", "4", "--seq", "32", "--batch", "2"],
}


class Hooks:
    """Puts sets of global module hooks in torch's registry and takes them out.

    `sets` maps a label to the registry entries of one shim (see main); the
    state "off" has none. Also times the shims' end-of-step hooks (optimizer
    post hooks: loss, fingerprints), which run only after a step their module
    hooks opened, so that their cost is reported apart from the per-module-call
    cost.
    """

    def __init__(self, sets, ranges=None):
        self.sets = sets
        self.step_end_ns = 0
        self.fingerprint_ns = 0
        # This shim's ModuleRanges: the state "forward-only" turns its backward
        # arming off, which splits the module hooks' cost into forward and backward.
        self.ranges = ranges
        # The C++ forward hooks' module (forward_hooks.cpp) when this shim uses them.
        self.native_forward = getattr(ranges, "_native", None)
        # This shim's Module.__call__ (module_call.py) when installed: only "on"
        # calls through it; the other states get torch's own (its hooks differ).
        self.torch_call = torch.nn.Module._wrapped_call_impl
        self.direct_call = torch.nn.Module.__dict__["__call__"]
        # The python function behind a C-implemented direct call (what its
        # descriptor gives: module_call.py), else the direct call itself.
        self.python_call = torch.nn.Module.__call__
        self.native_backward = self.python_backward = None
        if ranges is not None and getattr(ranges._backward, "native", False):
            from gcprof.backward_ranges import BackwardRanges
            self.native_backward = ranges._backward
            self.python_backward = BackwardRanges(torch, ranges._rec)
        if ranges is not None:
            steps = ranges._steps
            fingerprint = steps._fingerprint

            def timed_fingerprint(*args):
                start = time.thread_time_ns()
                try:
                    return fingerprint(*args)
                finally:
                    self.fingerprint_ns += time.thread_time_ns() - start
            steps._fingerprint = timed_fingerprint
        import torch.optim.optimizer as optim
        posts = optim._global_optimizer_post_hooks
        for key, fn in list(posts.items()):
            posts[key] = self._timed(fn)

    @staticmethod
    def snapshot():
        return {n: dict(getattr(registry, n)) for n in _HOOK_DICTS if hasattr(registry, n)}

    def _timed(self, fn):
        def timed(*args):
            start = time.thread_time_ns()
            try:
                return fn(*args)
            finally:
                self.step_end_ns += time.thread_time_ns() - start
        return timed

    def _python_hook(self, hook):
        """module_ranges.py's python hook for the thin wrapper of a C++ one."""
        if hook == self.ranges._pre_in_cpp:
            return self.ranges._pre
        if hook == self.ranges._post_in_cpp:
            return self.ranges._post
        return hook

    def use(self, label):
        for n in _HOOK_DICTS:
            if hasattr(registry, n):
                getattr(registry, n).clear()
        like_on = _ON_VARIANTS + (TORCH_DISPATCH, CPP_FORWARD_ONLY, PYTHON_CALL)
        entries_of = self.sets.get("on" if label in like_on else label, {})
        python_forward = self.native_forward is not None and label in _ON_VARIANTS
        for n, entries in entries_of.items():
            if python_forward:
                entries = {k: self._python_hook(v) for k, v in entries.items()}
            getattr(registry, n).update(entries)
        torch.nn.Module.__call__ = (self.direct_call if label in _DIRECT else
                                    self.python_call if label == PYTHON_CALL else self.torch_call)
        if self.native_backward is not None:  # C++ arming off: the backward ranges' module
            module = self.native_backward.module
            if label == CPP_FORWARD_ONLY:
                module.disable()
            else:
                module.install(*self.ranges._rec.native_entry_points())
        if self.native_forward is not None:
            self.ranges._native = None if python_forward else self.native_forward
        if self.native_backward is not None:
            self.ranges._backward = (self.python_backward if label == PYTHON_BACKWARD
                                     else self.native_backward)
        if self.ranges is not None:
            backward = self.ranges._backward
            if label == FORWARD_ONLY:
                backward.arm = lambda *args: None
            else:
                backward.__dict__.pop("arm", None)


def load_other_shim(path):
    """Installs a second copy of the shim (another checkout's profiler/python)
    under the package name gcprof_compare; returns its registry entries."""
    import importlib
    import importlib.util
    before = Hooks.snapshot()
    pkg = os.path.join(path, "gcprof")
    spec = importlib.util.spec_from_file_location(
        "gcprof_compare", os.path.join(pkg, "__init__.py"), submodule_search_locations=[pkg])
    module = importlib.util.module_from_spec(spec)
    sys.modules["gcprof_compare"] = module
    spec.loader.exec_module(module)
    importlib.import_module("gcprof_compare.startup").install_profiler(torch)
    return {n: {k: v for k, v in entries.items() if k not in before.get(n, {})}
            for n, entries in Hooks.snapshot().items()}


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
    if name in ("gpt2", "vit", "resnet18"):  # side_by_side.py's public-model jobs
        import train_public
        args = train_public.parse_args(_PUBLIC[name])
        model = train_public.build_model(args)
        gen = torch.Generator().manual_seed(1)
        x, y = train_public.make_batch(args, gen)
        return model, lambda: train_public.loss_of(args, model, x, y)
    import train_gpt
    args = train_gpt.parse_args(_GPT[name])
    model = train_gpt.build_model(args)
    gen = train_gpt.data_generator(args)
    inputs, targets = train_gpt.make_batch(args, gen)
    return model, lambda: torch.nn.functional.cross_entropy(
        model(inputs).reshape(-1, args.vocab), targets.reshape(-1))


def threads_cpu_ns():
    """CPU ns of this process's threads by name (/proc/self/task/*/schedstat)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except OSError:
            continue
        out[name] = out.get(name, 0) + ns
    return out


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
    states = ("on", "off") + ((PYTHON_FORWARD,) if hooks.native_forward is not None else ())
    for state in states:
        hooks.use(state)
        step(model, opt, loss_fn)  # warm
        before = counter.count
        python = profile_calls(model, opt, loss_fn)
        per[state] = (python, counter.count - before)
    hooks.use("on")
    py = (per["on"][0] - per["off"][0]) / calls
    native = (per["on"][1] - per["off"][1]) / calls
    where = " (C++ forward hooks)" if hooks.native_forward is not None else ""
    print(f"per module call{where}: {py:.1f} python-level calls (cProfile, hooks on - off), "
          f"{native:.2f} calls into the injector through ctypes")
    if PYTHON_FORWARD in per:
        py = (per[PYTHON_FORWARD][0] - per["off"][0]) / calls
        native = (per[PYTHON_FORWARD][1] - per["off"][1]) / calls
        print(f"per module call (python forward hooks): {py:.1f} python-level calls, "
              f"{native:.2f} calls into the injector through ctypes")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=("linears", "gpt", "gpt-short", "gpt2", "vit", "resnet18"), default="linears")
    ap.add_argument("--pairs", type=int, default=15)
    ap.add_argument("--count", action="store_true")
    ap.add_argument("--split", action="store_true",
                    help="also rotate in this shim's forward hooks alone (no backward ranges): "
                         "splits the module hooks' cost into forward and backward")
    ap.add_argument("--dispatch", action="store_true",
                    help="also rotate in this shim's hooks called by torch's Module.__call__")
    ap.add_argument("--compare", metavar="DIR",
                    help="another checkout's profiler/python: its hooks take turns with this one's")
    a = ap.parse_args()
    torch.set_num_threads(1)
    model, loss_fn = build(a.model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    sets = {"on": Hooks.snapshot()}
    if not sets["on"].get("_global_forward_pre_hooks"):
        sys.exit("hook_cost.py: no global module hooks: run it under `gcprof record`")
    if a.compare:
        sets["compare"] = load_other_shim(a.compare)
    pre = next(iter(sets["on"]["_global_forward_pre_hooks"].values()))
    ranges = getattr(pre, "__self__", None)  # this shim's ModuleRanges (its bound _pre)
    hooks = Hooks(sets, ranges if hasattr(ranges, "_backward") else None)
    hooks.use("off")
    calls = module_calls(model, loss_fn)
    for label in sets:  # each shim names the tree at its first root call
        hooks.use(label)
        for _ in range(3):
            step(model, opt, loss_fn)
    if a.count:
        count(model, opt, loss_fn, hooks, calls)
        return
    labels = list(sets) + ([FORWARD_ONLY] if a.split and hooks.ranges is not None else [])
    if a.split and hooks.python_backward is not None:
        labels.append(PYTHON_BACKWARD)
    if a.split and hooks.native_forward is not None:
        labels.append(PYTHON_FORWARD)
    if a.dispatch and hooks.direct_call is not hooks.torch_call:
        labels.append(TORCH_DISPATCH)
    if a.split and hooks.native_forward is not None and hooks.direct_call is not hooks.torch_call:
        labels.append(CPP_FORWARD_ONLY)
    if a.dispatch and hooks.python_call is not hooks.direct_call:
        labels.append(PYTHON_CALL)
    states = labels + ["off"]
    threads_before, main_before = threads_cpu_ns(), time.thread_time_ns()
    per_call = {label: [] for label in labels}
    ratio = {label: [] for label in labels}
    step_end, fingerprint, off = [], [], []
    for i in range(a.pairs):
        order = states[i % len(states):] + states[:i % len(states)]
        if i // len(states) % 2:
            order.reverse()
        t, end_ns, fp_ns = {}, {}, {}
        for state in order:
            hooks.use(state)
            hooks.step_end_ns = hooks.fingerprint_ns = 0
            t[state] = step(model, opt, loss_fn)
            end_ns[state] = hooks.step_end_ns
            fp_ns[state] = hooks.fingerprint_ns
        for label in labels:
            per_call[label].append((t[label] - end_ns[label] - t["off"]) / calls / 1000)
            ratio[label].append((t[label] - end_ns[label]) / t["off"])
        step_end.append(end_ns["on"] / t["off"])
        fingerprint.append(fp_ns["on"] / t["off"])
        off.append(t["off"] / 1e6)
    hooks.use("on")
    writer = threads_cpu_ns().get("gcprof-writer", 0) - threads_before.get("gcprof-writer", 0)
    main_ns = time.thread_time_ns() - main_before
    print(f"{a.model}: {calls} module calls per step, step without hooks "
          f"{statistics.median(off):.1f} ms (thread CPU, median of {a.pairs} rounds)")
    for label in labels:
        q = statistics.quantiles(per_call[label], n=4)
        cpp = " (C++ forward and backward hooks)" if hooks.native_forward is not None else \
            " (C++ backward hooks)" if hooks.native_backward else ""
        python_forward = " python" if hooks.native_forward is not None else ""
        name = {"on": "this shim" + cpp,
                FORWARD_ONLY: f"this shim's{python_forward} forward hooks alone",
                PYTHON_BACKWARD: f"this shim with{python_forward} forward and python backward hooks",
                PYTHON_FORWARD: "this shim with python forward hooks (C++ backward)",
                TORCH_DISPATCH: "this shim's hooks called by torch's Module.__call__",
                CPP_FORWARD_ONLY: "this shim's C++ forward hooks alone (C++ arming off)",
                PYTHON_CALL: "this shim through module_call.py's python __call__",
                }.get(label, a.compare)
        print(f"  {name}: module hooks per module call (fwd+bwd): median "
              f"{statistics.median(per_call[label]):.1f} us (quartiles {q[0]:.1f}-{q[2]:.1f}); "
              f"step with them / without: {statistics.median(ratio[label]):.3f}")
    def same_rounds(more, less):
        """Median over the rounds of `more`'s per-call cost less `less`'s."""
        return statistics.median([x - y for x, y in zip(per_call[more], per_call[less])])

    full = PYTHON_FORWARD if PYTHON_FORWARD in labels else "on"  # same forward hooks
    differences = [  # (shown when, more, less, what the difference is)
        (FORWARD_ONLY, full, FORWARD_ONLY, "backward node hooks (arming + dispatch), per module call",
         f"{full} - its forward hooks alone, same round"),
        (PYTHON_BACKWARD, PYTHON_BACKWARD, FORWARD_ONLY, "python backward node hooks instead, per module call",
         "same rounds"),
        (PYTHON_FORWARD, PYTHON_FORWARD, "on", "C++ forward hooks save per module call",
         "python forward hooks - this shim, same rounds"),
        (TORCH_DISPATCH, TORCH_DISPATCH, "on", "the direct call saves per module call",
         "torch dispatch - this shim, same rounds"),
        (CPP_FORWARD_ONLY, "on", CPP_FORWARD_ONLY, "C++ backward ranges (arming + dispatch), per module call",
         "this shim - its C++ forward alone, same rounds"),
        (PYTHON_CALL, PYTHON_CALL, "on", "the C-implemented call saves per module call",
         "python __call__ - this shim, same rounds"),
    ]
    for when, more, less, what, how in differences:
        if when in labels:
            print(f"  {what}: median {same_rounds(more, less):.1f} us ({how})")
    print(f"  end-of-step hook (loss, fingerprints): +{100 * statistics.median(step_end):.2f}% of a step "
          f"(mean +{100 * statistics.mean(step_end):.2f}%), of which fingerprints "
          f"+{100 * statistics.median(fingerprint):.2f}% (mean +{100 * statistics.mean(fingerprint):.2f}%)")
    print(f"  gcprof's writer thread: {writer / 1e6:.0f} ms of CPU over the rounds, "
          f"{100 * writer / main_ns:.1f}% of the training thread's {main_ns / 1e6:.0f} ms")


if __name__ == "__main__":
    main()

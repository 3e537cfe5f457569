"""What sitecustomize starts: nothing until torch is imported, then the hooks.

GCPROF_DB set (by `gcprof record`) and the injector (or a test recorder) in
the process: module ranges, backward ranges, steps and the loss are recorded.
GCPROF_PLAN set (by `gcprof verify`, or by hand): the plan is applied before
the first step, recording or not. GCPROF_COMPILE_BUDGET set (by `gcprof
verify --compile-budgets`): torch.compile's activation_memory_budget
(compile_budget.py). None set: nothing is installed.
"""
import functools
import os

from . import compile_budget, failsafe
from .torch_import_hook import TorchImportWatcher


def wanted():
    return bool(os.environ.get("GCPROF_DB") or os.environ.get("GCPROF_PLAN")
                or os.environ.get(compile_budget.ENV))


_started = False


def start():
    # Once per process: an installed package's GCPROF_PLAN hook (gcprof.pth)
    # and `gcprof record`'s sitecustomize can both be there.
    global _started
    if wanted() and not _started:
        _started = True
        TorchImportWatcher(on_torch_loaded).install()
    plan_path = os.environ.get("GCPROF_PLAN")
    if plan_path:
        from .runtime.env_plan import arm_job, warn_if_unapplied
        if arm_job(plan_path):  # only the job's first process speaks for the job
            import atexit
            atexit.register(warn_if_unapplied, plan_path)


def on_torch_loaded(torch):
    try:
        compile_budget.apply(torch)
    except Exception as exc:
        failsafe.internal_error("setting torch.compile's activation_memory_budget", exc)
    plan_path = os.environ.get("GCPROF_PLAN")
    if plan_path:
        # Before the profiler's hooks: global pre-hooks run in registration order.
        from .runtime.env_plan import PlanOnFirstForward
        PlanOnFirstForward(torch, plan_path).install()
    if os.environ.get("GCPROF_DB"):
        try:
            install_profiler(torch)
        except Exception as exc:
            failsafe.internal_error("installing the module hooks", exc)


def install_profiler(torch, recorder=None):
    """Installs the recording hooks; returns the recorder, None when nothing records."""
    from . import native

    recorder = recorder or native.load()
    if recorder is None:
        return None  # GCPROF_DB without the injector (e.g. LD_PRELOAD dropped): stay out
    install_hooks(torch, recorder)
    # PyTorch's CUDA allocator observed (allocator_trace.py); attach does it
    # itself, with a baseline of what the allocator holds (device_baseline.py).
    if os.environ.get("GCPROF_BACKEND", "auto") != "host":
        from . import allocator_trace
        allocator_trace.install(torch, recorder)
    return recorder


def install_hooks(torch, recorder, attaching=None):
    """The recording hooks (steps, module ranges, ops, FSDP gathers) into
    `recorder`; returns the StepTracker. `record` calls it when torch is
    imported, `attach` (attach.py) in a job that is already training, with
    `attaching(steps)`: called before any module hook is in, so that what it
    sets up is there when the job's thread opens the first step (python lets
    that thread run in the middle of this function)."""
    from .fsdp_gathers import FsdpGathers
    from .module_ranges import ModuleRanges
    from .steps import StepTracker

    recorder.set_runtime("python")
    steps = StepTracker(torch, recorder)
    steps.install()
    if attaching is not None:
        attaching(steps)
    ranges = ModuleRanges(torch, recorder, steps, attached=attaching is not None)
    ranges.install()
    steps.model = ranges.primary
    steps.hook_cost = ranges.take_hook_cost
    if os.environ.get("GCPROF_OPS") == "1":
        from .op_ranges import OpRanges
        ranges.ops = OpRanges(torch, recorder)
        steps.op_cost = ranges.ops.take_cost
        from . import dispatch_costs
        steps.dispatch_costs = functools.partial(dispatch_costs.measure, torch)
    FsdpGathers(torch, recorder).install(steps)
    from . import autocast_clears
    autocast_clears.install(torch, recorder)
    return steps

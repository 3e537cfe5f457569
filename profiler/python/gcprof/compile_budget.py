"""GCPROF_COMPILE_BUDGET: torch.compile's activation_memory_budget for a job
that `gcprof verify --compile-budgets` re-runs, one value per run.

Inductor's min-cut partitioner reads torch._functorch.config's
activation_memory_budget when it compiles a graph: the first call of a
compiled model, and any recompilation. The value is set when torch is
imported and again at each call of a compiled model, so that it wins over
a value the job sets itself (the value under test is the point of the run).
A value that is not a number from 0 to 1 is reported once and left unset:
the job runs as it would without gcprof. The value in force at the first
compiled call is recorded as the scalar "activation_memory_budget"
(module_ranges.py), so a run says what it was compiled with.
"""
import os
import sys

ENV = "GCPROF_COMPILE_BUDGET"
SCALAR = "activation_memory_budget"  # read by `verify --compile-budgets`

_reported = []


def wanted():
    """The value to set, or None (not set, or not a number from 0 to 1)."""
    text = os.environ.get(ENV)
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if 0.0 <= value <= 1.0:
        return value
    if not _reported:
        _reported.append(text)
        sys.stderr.write("gcprof: %s=%r is not a number from 0 to 1; activation_memory_budget "
                         "left as the job sets it\n" % (ENV, text))
    return None


def _config(torch):
    """torch._functorch.config, or None on a torch without the setting."""
    config = getattr(getattr(torch, "_functorch", None), "config", None)
    if config is None:
        try:
            import torch._functorch.config as config  # noqa: F811  (not imported by torch itself)
        except ImportError:
            return None
    return config if hasattr(config, "activation_memory_budget") else None


def apply(torch):
    """Sets the value for the graphs Inductor compiles from now on."""
    value = wanted()
    config = _config(torch) if value is not None else None
    if config is not None and config.activation_memory_budget != value:
        config.activation_memory_budget = value


def compiling(torch):
    """False when TORCH_COMPILE_DISABLE=1 (or the job) turned torch.compile
    off: its OptimizedModule then runs the model eagerly, as a plain module."""
    dynamo = sys.modules.get("torch._dynamo.config")
    return not getattr(dynamo, "disable", False)


def in_force(torch):
    """The value Inductor compiles with now (the job's own, or ours); -1
    on a torch without the setting."""
    config = _config(torch)
    return float(config.activation_memory_budget) if config is not None else -1.0

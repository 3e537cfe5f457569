"""GCPROF_COMPILE_BUDGET: torch.compile's activation_memory_budget for a job
that `gcprof verify --compile-budgets` re-runs, one value per run.

Inductor's min-cut partitioner reads torch._functorch.config's
activation_memory_budget when it compiles a graph: the first call of a
compiled model, and any recompilation. The value is set when torch is
imported and again at each call of a compiled model, so that it wins over
a value the job sets itself (the value under test is the point of the run).
A value that is not a number from 0 to 1 is reported once and left unset:
the job runs as it would without gcprof.
"""
import os
import sys

ENV = "GCPROF_COMPILE_BUDGET"

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


def apply(torch):
    """Sets the value for the graphs Inductor compiles from now on."""
    value = wanted()
    if value is None:
        return
    config = getattr(getattr(torch, "_functorch", None), "config", None)
    if config is None:
        import torch._functorch.config as config  # noqa: F811  (not imported by torch itself)
    if config.activation_memory_budget != value:
        config.activation_memory_budget = value

"""GCPROF_COMPILE_BUDGET (`verify --compile-budgets`): the shim sets torch.compile's
activation_memory_budget, over the job's own value, and records the value in force."""
import pytest
import torch

from harness import run_python

if not hasattr(torch, "compile"):
    pytest.skip("torch %s has no torch.compile" % torch.__version__, allow_module_level=True)

JOB = """
import torch
import torch._functorch.config as config
print("at_import", config.activation_memory_budget)
config.activation_memory_budget = 0.9  # the job's own value, set before compiling
model = torch.compile(torch.nn.Linear(4, 4), backend="eager")
model(torch.ones(2, 4, requires_grad=True)).sum().backward()
print("at_compile", config.activation_memory_budget)
"""


def values(proc):
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)


def budget_scalars(events):
    return [e[2] for e in events if e[0] == "scalar" and e[1] == "activation_memory_budget"]


def test_value_set_at_import_and_over_the_jobs_own_at_the_compiled_call():
    proc, events = run_python(["-c", JOB], fake=True, GCPROF_COMPILE_BUDGET="0.25")
    out = values(proc)
    assert out == {"at_import": "0.25", "at_compile": "0.25"}, out
    assert budget_scalars(events) == [0.25], events
    assert [e for e in events if "torch.compile Linear" in str(e)], events  # advise's marker


def test_recording_alone_records_the_jobs_value_and_changes_nothing():
    proc, events = run_python(["-c", JOB], fake=True)
    assert values(proc) == {"at_import": "1.0", "at_compile": "0.9"}
    assert budget_scalars(events) == [0.9]


def test_a_value_out_of_range_is_reported_and_left_alone():
    proc, _ = run_python(["-c", JOB], fake=True, GCPROF_COMPILE_BUDGET="1.5")
    assert values(proc) == {"at_import": "1.0", "at_compile": "0.9"}
    assert proc.stderr.count("GCPROF_COMPILE_BUDGET='1.5' is not a number from 0 to 1") == 1, proc.stderr


def test_a_model_compiled_with_torch_compile_disabled_is_not_marked():
    proc, events = run_python(["-c", JOB], fake=True, TORCH_COMPILE_DISABLE="1")
    values(proc)
    assert budget_scalars(events) == []
    assert not [e for e in events if "torch.compile" in str(e)], events

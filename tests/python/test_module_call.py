"""module_call.py: gcprof's C++ hooks called without torch's hook dispatch.

The job's own hooks (global or on its modules) send calls through torch's
dispatch again; the events recorded must be the same either way, the job's
hooks must run on every call, and detaching must put torch's Module.__call__
back.
"""
import pytest

from harness import run_python
from test_native_hooks import _comparable, _library, _same

JOB = "tests/python/module_call_job.py"


def _run(mode):
    proc, events = run_python([JOB, mode], fake=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    return lines, [_comparable(e) for e in events]


def test_the_job_hooks_see_every_call_the_events_stay_the_same_and_detaching_restores():
    _library()
    direct, events = _run("direct")
    # What python sees is module_call.py's function; what runs is its C version.
    assert direct["call"] == "gcprof.module_call", direct
    assert direct["installed"] == "ModuleCall", direct
    assert direct["hooks"] == "0 0"
    assert len(events) > 200, len(events)
    for mode in ("global-hook", "module-hooks"):
        lines, others = _run(mode)
        pre, post = map(int, lines["hooks"].split())
        assert pre >= post > 0, (mode, lines)  # (post: not after a forward that raised)
        _same(others, events)
    # Detached at the end: torch's Module.__call__ is back, gcprof's hooks are gone
    # (torch leaves the with_kwargs entry of a removed global hook: not ours to clear)
    assert direct["detached"].startswith("True [0, 0, 0"), direct


def test_a_call_after_an_fx_trace_puts_the_c_call_back_and_detaching_restores_torch():
    _library()
    lines, _ = _run("fx-trace")
    assert lines["after-trace"] == "function", lines  # what FX's tracer put back
    assert lines["after-a-call"] == "ModuleCall", lines
    assert lines["detached"].startswith("True [0, 0, 0"), lines


def test_torch_compile_guards_read_the_python_call_through_the_class_dict():
    # Dynamo guards a module call on type(m).__mro__[i].__dict__['__call__']
    # .__closure__: the C object must answer as the python function does,
    # or compiling a model that calls a sub-module fails inside the job.
    _library()
    lines, _ = _run("compile")
    assert lines["installed"] == "ModuleCall", lines
    assert lines["compiled"] == "trained", lines

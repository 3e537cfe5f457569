"""Plans the shim refuses as the C++ verbs do: nested too deeply to be a
plan (python's json module recursed into a raw RecursionError), and only the
refusal is said, not a warning that the job ran no training forward."""
import atexit
import os
import shutil
import sys
import tempfile

from harness import SHIM, TINY, run_python

sys.path.insert(0, SHIM)

TMP = tempfile.mkdtemp(prefix="gcprof-plan-limits-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)


def deep_plan(depth, name):
    """A plan whose "units" nests `depth` lists (the rest is a valid plan)."""
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write('{"format": "gcprof.plan/2", "checkpoint": [["layers.0"]], "note": "[[[[", "units": '
                + "[" * depth + "]" * depth + "}")
    return path


def test_a_deeply_nested_plan_in_gcprof_plan_is_refused_in_words():
    path = deep_plan(100000, "deep.json")
    proc, _ = run_python([TINY], GCPROF_PLAN=path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr[-2000:]
    assert "nested deeper than 64 levels" in proc.stderr, proc.stderr
    assert "ran no training forward" not in proc.stderr, proc.stderr
    assert "loss" not in proc.stdout, "the job ran a step with a refused plan"


def test_apply_plan_refuses_a_deeply_nested_plan():
    import gcprof
    try:
        gcprof.load_plan(deep_plan(5000, "deep-code.json"))
    except gcprof.PlanError as error:
        assert "nested deeper than 64 levels" in str(error), error
    else:
        raise AssertionError("no PlanError")
    # Nesting at the limit, with brackets inside strings, is still a plan.
    plan = gcprof.load_plan(deep_plan(60, "deep-ok.json"))
    assert plan["checkpoint"] == [["layers.0"]]


def test_a_refused_plan_is_not_followed_by_the_unapplied_warning():
    path = os.path.join(TMP, "missing.json")
    with open(path, "w") as f:
        f.write('{"format": "gcprof.plan/1", "checkpoint": [["layers.99"]]}')
    proc, _ = run_python([TINY], GCPROF_PLAN=path)
    assert proc.returncode == 2, proc.stderr
    assert "layers.99" in proc.stderr, proc.stderr
    assert "ran no training forward" not in proc.stderr, proc.stderr

"""The C++ hooks (profiler/backward_hooks: backward ranges, forward hooks)
against the python ones.

Every other shim test runs with whichever path is in use (CTest runs them
with the C++ hooks and again with GCPROF_NATIVE_HOOKS=0); these check that
the paths record the same events (C++ forward and backward; python forward
and C++ backward, GCPROF_NATIVE_FORWARD=0; all python), that the switches
and the torch/python check choose the python path, and that a mismatch says
so once.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import pytest

from harness import BUILD, HERE, ROOT, clean_env, run_python

JOB = os.path.join(HERE, "backward_ranges_job.py")


def _library():
    path = os.environ.get("GCPROF_NATIVE_HOOKS_LIB")
    if os.environ.get("GCPROF_NATIVE_HOOKS") == "0" or not path or not os.path.exists(path):
        pytest.skip("the C++ backward hooks are not built or switched off")
    return path


def _events(**env):
    proc, events = run_python([JOB], fake=True, **env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, [_comparable(e) for e in events]


def _comparable(event):
    """Without what differs between two runs of the same job: addresses, timings."""
    if event[0] == "start" and event[2].startswith("inplace output "):
        # The C++ hooks write the later calls' (forward_hooks.cpp noteInplace).
        assert re.fullmatch(r"inplace output 0x[0-9a-f]+", event[2]), event
        return event[:2] + ("inplace output",) + event[3:]
    if event[0] == "scalar" and event[1].endswith("_ns_per_call"):
        return event[:2] + (None,) + event[3:]
    return event


def _backward(events):
    starts = {e[1]: e[2] for e in events if e[0] == "start" and e[3] == 2}
    return starts, [e for e in events if (e[0] == "start" and e[3] == 2)
                    or (e[0] == "end" and e[1] in starts)]


def _same(native, python):
    assert native == python, next(
        (i, a, b) for i, (a, b) in enumerate(zip(native, python)) if a != b) \
        if len(native) == len(python) else (len(native), len(python))


def test_cpp_and_python_hooks_record_the_same_events():
    _library()
    _, native = _events()
    _, python_forward = _events(GCPROF_NATIVE_FORWARD="0")
    _, python = _events(GCPROF_NATIVE_HOOKS="0")
    starts, backward = _backward(native)
    assert len(starts) > 40, "too few backward ranges to compare: %d" % len(starts)
    # The cases the job is made of are all there (names from backward_ranges_job.py).
    for name in ("stem", "pair.same", "pair.act", "block", "MSELoss", "layers.1.mlp.act", "embed",
                 "nested", "keyword", "subclass"):
        assert name in starts.values(), (name, sorted(set(starts.values())))
    forward = {e[2] for e in native if e[0] == "start" and e[3] == 1}
    for name in ("plain", "parameter", "frozen", "nested.lin"):
        assert name in forward, (name, sorted(forward))
    _same(native, python)
    _same(python_forward, python)


def test_the_forward_hooks_are_the_cpp_ones_unless_switched_off():
    _library()
    probe = ("import torch, fake_recorder, sys; from gcprof import startup;"
             "startup.install_profiler(torch, fake_recorder.FakeRecorder());"
             "hooks = torch.nn.modules.module._global_forward_pre_hooks.values();"
             "m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh());"
             "m(torch.randn(2, 4)).sum().backward(); m(torch.randn(2, 4));"
             "n = sys.modules.get('gcprof_backward_hooks');"
             "print([h.__name__ for h in hooks], n.forward_depth() if n else None)")
    for env, want in (({}, "['_pre_in_cpp'] 0"), ({"GCPROF_NATIVE_FORWARD": "0"}, "['_pre'] 0"),
                      ({"GCPROF_NATIVE_HOOKS": "0"}, "['_pre'] None")):
        proc, _ = run_python(["-c", probe], **env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.strip() == want, (env, proc.stdout, proc.stderr)


def test_a_tree_changed_between_steps_is_named_anew():
    # The C++ hooks keep the model's names while its tree is unchanged
    # (module_tree.cpp); every change that bypasses the registration hooks
    # must still be seen at the next root call, on both paths.
    _library()
    for env in ({}, {"GCPROF_NATIVE_HOOKS": "0"}):
        proc, _ = run_python([os.path.join(HERE, "tree_changes_job.py")], **env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        lines = proc.stdout.splitlines()
        assert len(lines) == 9 and all(l.startswith("ok ") for l in lines), (env, proc.stdout)


def test_the_switch_and_a_foreign_torch_choose_the_python_hooks():
    library = _library()
    probe = ("import torch, fake_recorder; from gcprof import native_hooks;"
             "r = native_hooks.load(torch, fake_recorder.FakeRecorder());"
             "print('native' if r is not None else 'python')")
    proc, _ = run_python(["-c", probe])
    assert proc.stdout.strip() == "native", proc.stdout + proc.stderr
    proc, _ = run_python(["-c", probe], GCPROF_NATIVE_HOOKS="0")
    assert proc.stdout.strip() == "python" and not proc.stderr, proc.stdout + proc.stderr
    # A copy built "for another torch": never imported, one line says why.
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(library))
        shutil.copy(library, copy)
        with open(os.path.join(tmp, "gcprof_backward_hooks.abi"), "w") as f:
            f.write("torch 0.0.1 python cpython-00\n")
        proc, events = _events(GCPROF_NATIVE_HOOKS_LIB=copy)
        said = [l for l in proc.stderr.splitlines() if "gcprof_backward_hooks" in l]
        assert len(said) == 1 and "built for torch 0.0.1" in said[0], proc.stderr
        assert "python hooks" in said[0], said
        _, python = _events(GCPROF_NATIVE_HOOKS="0")
        assert events == python


def test_an_installation_without_them_says_what_is_missing_and_what_it_costs():
    # `pip install .` with build isolation built no extension: recording says
    # so once, with the cost and the way to get them (it said nothing).
    probe = ("import torch, fake_recorder; from gcprof import native_hooks;"
             "rec = fake_recorder.FakeRecorder();"
             "print('native' if native_hooks.load(torch, rec) is not None else 'python')")
    with tempfile.TemporaryDirectory() as tmp:
        proc, _ = run_python(["-c", probe],
                             GCPROF_NATIVE_HOOKS_LIB=os.path.join(tmp, "gcprof_backward_hooks.so"))
    assert proc.stdout.strip() == "python", proc.stdout + proc.stderr
    said = [l for l in proc.stderr.splitlines() if l.startswith("gcprof:")]
    assert len(said) == 1, proc.stderr
    assert "C++ recording hooks are not installed" in said[0], said
    assert "50 us more" in said[0] and "--no-build-isolation" in said[0], said


def _probe(code):
    """What python code printed, run with the fake recorder's tests on the path."""
    proc, _ = run_python(["-c", code])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_no_range_stays_open_after_the_passes():
    _library()
    probe = ("import torch, fake_recorder, backward_ranges_job as j;"
             "from gcprof import startup;"
             "startup.install_profiler(torch, fake_recorder.FakeRecorder());"
             "j.shapes_and_losses();"
             "from gcprof import native_hooks;"
             "import sys; m = sys.modules['gcprof_backward_hooks'];"
             "print('open', m.open_ranges())")
    out = _probe(probe)
    assert out.split() == ["open", "0"], out


def test_the_failsafe_stops_hooks_already_on_a_graph():
    # Armed in the forward, then an internal error elsewhere: the backward
    # records nothing. And the C++ forward hooks stop too: a forward after it
    # records nothing.
    _library()
    probe = ("import torch, fake_recorder; from gcprof import startup, failsafe;"
             "rec = fake_recorder.FakeRecorder(); startup.install_profiler(torch, rec);"
             "m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh());"
             "loss = m(torch.randn(2, 4)).sum();"
             "failsafe.internal_error('a test', RuntimeError('on purpose'));"
             "loss.backward(); before = len(rec.events);"
             "m(torch.randn(2, 4)); m[0](torch.randn(2, 4));"
             "import sys; print('native' if 'gcprof_backward_hooks' in sys.modules else 'python',"
             " sum(1 for e in rec.events if e[0] == 'start' and e[3] == 2),"
             " len(rec.events) - before)")
    out = _probe(probe)
    assert out.split() == ["native", "0", "0"], out


def test_a_second_recording_in_the_process_reports_in_place_modules_again():
    # Detached, then attached again (failsafe.remove_all, as `gcprof attach`
    # does): the C++ name table keeps its names, but the new python side has
    # reported nothing yet, so the in-place ReLU is reported in both.
    _library()
    probe = ("import torch, fake_recorder; from gcprof import startup, failsafe\n"
             "def session():\n"
             "    rec = fake_recorder.FakeRecorder(); startup.install_profiler(torch, rec)\n"
             "    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(inplace=True))\n"
             "    for _ in range(2):\n"
             "        m(torch.randn(2, 4, requires_grad=True)).sum().backward()\n"
             "    failsafe.remove_all()\n"
             "    return [e[1] for e in rec.events if e[0] == 'scalar' and e[1].startswith('inplace ')]\n"
             "print(session(), session())")
    out = _probe(probe)
    assert out.strip() == "['inplace 1'] ['inplace 1']", out


def test_gcprof_record_finds_them_beside_the_injector():
    _library()
    gcprof = os.path.join(BUILD, "bin", "gcprof")
    if not os.access(gcprof, os.X_OK):
        pytest.skip("gcprof is not built in " + BUILD)
    job = ("import sys, torch; m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh());"
           "m(torch.randn(2, 4)).sum().backward();"
           "print('native' if 'gcprof_backward_hooks' in sys.modules else 'python')")
    env = clean_env()
    env.pop("GCPROF_NATIVE_HOOKS_LIB", None)  # found through the preloaded injector (dladdr)
    with tempfile.TemporaryDirectory() as tmp:
        for switch, want in ((None, "native"), ("0", "python")):
            if switch is not None:
                env["GCPROF_NATIVE_HOOKS"] = switch
            db = os.path.join(tmp, "run%s.db" % want)
            proc = subprocess.run([gcprof, "record", "-o", db, "--", sys.executable, "-c", job],
                                  env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert proc.stdout.split()[-1:] == [want], proc.stdout + proc.stderr
            with sqlite3.connect(db) as c:
                rows = c.execute("select name from ranges where phase=2 order by start_ns").fetchall()
            assert [n for n, in rows] == ["", "1", "0"], rows

"""The shim's start-up: inert unless asked, chains sitecustomize, never breaks the job."""
import os
import tempfile

from harness import TINY, loss_lines, run_python

PROBE = """
import sys
print("gcprof_loaded", "gcprof" in sys.modules)
print("watcher", any(type(f).__name__ == "TorchImportWatcher" for f in sys.meta_path))
import torch, torch.nn.modules.module as m
print("pre_hooks", len(m._global_forward_pre_hooks))
print("post_hooks", len(m._global_forward_hooks))
"""


def probe(**kw):
    proc, events = run_python(["-c", PROBE], **kw)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line), proc, events


def test_inert_without_gcprof_db():
    out, proc, _ = probe()
    assert out == {"gcprof_loaded": "False", "watcher": "False", "pre_hooks": "0",
                   "post_hooks": "0"}, out
    assert proc.stderr == "", proc.stderr


def test_gcprof_db_without_injector_installs_nothing():
    # A child that kept PYTHONPATH and GCPROF_DB but lost LD_PRELOAD is not recorded.
    out, proc, _ = probe(GCPROF_DB="/tmp/x.db")
    assert out["pre_hooks"] == "0" and out["post_hooks"] == "0", out
    assert proc.stderr == "", proc.stderr


def test_hooks_installed_when_recording_and_torch_not_imported_eagerly():
    out, proc, events = probe(fake=True)
    assert out["watcher"] == "True", out  # armed, waiting for torch
    assert out["pre_hooks"] == "1" and out["post_hooks"] == "1", out
    assert ("runtime", "python") in events, events
    # A job that never imports torch never pays for it.
    proc, _ = run_python(["-c", "import sys; print('torch' in sys.modules)"], fake=True)
    assert proc.stdout.strip() == "False", proc.stdout + proc.stderr


def test_chains_existing_sitecustomize():
    with tempfile.TemporaryDirectory() as other:
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("import os\nos.environ['CHAINED_SITE'] = 'ran'\n")
        code = ("import os, sitecustomize\n"
                "print(os.environ.get('CHAINED_SITE'), sitecustomize.__file__)\n"
                "import torch, torch.nn.modules.module as m\n"
                "print(len(m._global_forward_pre_hooks))\n")
        for fake in (False, True):
            proc, _ = run_python(["-c", code], fake=fake, pythonpath=[other])
            assert proc.returncode == 0, proc.stderr
            first, hooks = proc.stdout.splitlines()
            assert first == "ran " + os.path.join(other, "sitecustomize.py"), first
            assert hooks == ("1" if fake else "0"), (fake, hooks)


def test_chained_sitecustomize_error_surfaces_as_without_gcprof():
    with tempfile.TemporaryDirectory() as other:
        with open(os.path.join(other, "sitecustomize.py"), "w") as f:
            f.write("raise RuntimeError('broken site')\n")
        with_shim, _ = run_python(["-c", "print('job ran')"], fake=True, pythonpath=[other])
        without, _ = run_python(["-c", "print('job ran')"], shim=False, pythonpath=[other])
        assert with_shim.stdout == without.stdout == "job ran\n"
        assert "broken site" in with_shim.stderr and "broken site" in without.stderr


def test_internal_error_warns_once_and_job_continues():
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "broken_recorder.py"), "w") as f:
            # step_begin: a root call opens the step from python on both hook
            # paths; the C++ forward hooks open ranges through C entry points,
            # where a python exception cannot come back (the injector's never raise).
            f.write("from fake_recorder import FakeRecorder\n"
                    "class Broken(FakeRecorder):\n"
                    "    def step_begin(self, *a):\n"
                    "        raise ValueError('recorder exploded')\n"
                    "def make():\n    return Broken()\n")
        plain, _ = run_python([TINY], shim=False)
        broken, _ = run_python([TINY], pythonpath=[d], GCPROF_DB="/tmp/x.db",
                               GCPROF_RECORDER="broken_recorder:make")
        assert loss_lines(broken) == loss_lines(plain)
        warnings = [l for l in broken.stderr.splitlines() if l.startswith("gcprof:")]
        assert len(warnings) == 1 and "recorder exploded" in warnings[0], broken.stderr
        assert "Traceback" not in broken.stderr, broken.stderr

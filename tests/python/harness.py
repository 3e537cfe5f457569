"""What the python shim's tests share: paths, the jobs' environment, running a job.

The tests are pytest functions (test_*.py), run by tests/run_pytest.py, which
makes a run where every test skipped exit 77 (CTest's SKIP_RETURN_CODE) and
prints "SKIP <test> - <reason>" lines for scripts/skipped-tests.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHIM = os.path.join(ROOT, "profiler", "python")
TINY = os.path.join(HERE, "tiny_model.py")
BUILD = os.environ.get("GCPROF_BUILD", os.path.join(ROOT, "build"))

# The C++ backward hooks of this build (docs/python-shim.md) serve the fake
# recorder too, so every shim test runs them; CTest runs the tests again with
# GCPROF_NATIVE_HOOKS=0 for the python path (tests/python/CMakeLists.txt).
# Both variables are test configuration and reach the jobs the tests start.
# Only for the interpreter it was built for: another one (Debian's python3 with
# torch 1.13, shim_torch1) keeps the python path without the mismatch warning,
# which test_native_hooks.py checks on its own.
_NATIVE_HOOKS = os.path.join(BUILD, "lib", "gcprof_backward_hooks.so")


def _built_for_this_python():
    import importlib.util
    import sysconfig
    try:  # torch/version.py read, not imported (a test imports torch when it needs it)
        with open(os.path.join(BUILD, "lib", "gcprof_backward_hooks.abi")) as f:
            built_for = f.read().strip()
        spec = importlib.util.find_spec("torch")
        with open(os.path.join(spec.submodule_search_locations[0], "version.py")) as f:
            version = next(line.split("=", 1)[1].strip().strip("'\"") for line in f
                           if line.startswith("__version__"))
    except Exception:
        return False
    return built_for == "torch %s python %s" % (version, sysconfig.get_config_var("SOABI"))


if ("GCPROF_NATIVE_HOOKS_LIB" not in os.environ and os.path.exists(_NATIVE_HOOKS)
        and _built_for_this_python()):
    os.environ["GCPROF_NATIVE_HOOKS_LIB"] = _NATIVE_HOOKS
_TEST_CONFIGURATION = ("GCPROF_NATIVE_HOOKS", "GCPROF_NATIVE_HOOKS_LIB")


def clean_env(**extra):
    """The environment of a job: no gcprof variables unless given."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("GCPROF_") or k in _TEST_CONFIGURATION)
           and k not in ("PYTHONPATH", "LD_PRELOAD")}
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def run_python(args, shim=True, fake=False, pythonpath=(), **env):
    """Runs python3 with the shim on PYTHONPATH (like `gcprof record` does).

    fake=True: GCPROF_DB is set and the fake recorder replaces the injector;
    returns (completed process, events or None).
    """
    paths = ([SHIM] if shim else []) + list(pythonpath) + [HERE]
    env = clean_env(PYTHONPATH=os.pathsep.join(paths), **env)
    events_path = None
    if fake:
        fd, events_path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        env.update(GCPROF_DB=env.get("GCPROF_DB", "/tmp/gcprof-shim-test.db"),
                   GCPROF_RECORDER="fake_recorder:from_env", GCPROF_FAKE_EVENTS=events_path)
    proc = subprocess.run([sys.executable] + list(args), env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    events = None
    if events_path:
        from fake_recorder import read_events
        events = read_events(events_path) if os.path.getsize(events_path) else []
        os.unlink(events_path)
    return proc, events


def loss_lines(proc):
    assert proc.returncode == 0, "job failed (%d):\n%s" % (proc.returncode, proc.stderr[-3000:])
    lines = [l for l in proc.stdout.splitlines() if l.startswith("loss ")]
    assert lines, "no loss lines in:\n" + proc.stdout
    return lines

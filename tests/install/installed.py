"""Helpers for the install tests: a scratch folder outside the repository, an
environment with nothing of the checkout in it, and the sample job."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("GCPROF_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import pipeline  # noqa: E402  (sample sizes, loss parsing)


def scratch(tag):
    """A fresh folder outside the repository (the system's temp dir)."""
    d = tempfile.mkdtemp(prefix=f"gcprof-install-{tag}-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    assert not os.path.realpath(d).startswith(os.path.realpath(ROOT) + os.sep), d
    return d


def outside_env(bin_dir=None):
    """The environment of a user's shell: no gcprof variables, no PYTHONPATH
    into the checkout; bin_dir first on PATH like an activated venv."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GCPROF_") and k not in ("PYTHONPATH", "LD_PRELOAD")}
    if bin_dir:
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def cmake_cache(name):
    """A setting of the build under test ("" when not set)."""
    with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return ""


def run(argv, check=True, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {p.returncode}\n{p.stdout[-4000:]}\n"
                             f"{p.stderr[-4000:]}")
    return p


def copy_sample(dest_dir):
    """The python sample job, copied so that nothing runs from the checkout."""
    os.makedirs(dest_dir, exist_ok=True)
    return shutil.copy(pipeline.TRAIN_PY, dest_dir)


SHIM_PROBE = "import sitecustomize; print(sitecustomize.__file__)"

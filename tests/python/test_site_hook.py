"""gcprof.pth, the GCPROF_PLAN hook an installed package puts in site-packages
(docs/install.md): inert without GCPROF_PLAN, applies the plan in a plain python
with it, and applies it once when `gcprof record`'s sitecustomize is there too.

The hook is tested where python really reads it: a user site-packages
(PYTHONUSERBASE) holding gcprof.pth and the package, as a wheel lays them out.
"""
import atexit
import os
import shutil
import site
import subprocess
import sys
import tempfile

import pytest

from harness import SHIM, TINY, clean_env, loss_lines, run_python
from test_plan import plan_file as plan_file_with

TMP = tempfile.mkdtemp(prefix="gcprof-site-hook-test-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)


def user_base():
    """A PYTHONUSERBASE whose site-packages holds gcprof.pth and the package."""
    base = os.path.join(TMP, "userbase")
    if not os.path.isdir(base):
        env = clean_env(PYTHONUSERBASE=base)
        where = "import site; print(site.getusersitepackages())"
        site_dir = subprocess.run([sys.executable, "-c", where], env=env, capture_output=True,
                                  text=True, check=True).stdout.strip()
        os.makedirs(site_dir)
        shutil.copy(os.path.join(SHIM, "gcprof.pth"), site_dir)
        shutil.copytree(os.path.join(SHIM, "gcprof"), os.path.join(site_dir, "gcprof"))
    if not site.ENABLE_USER_SITE:
        pytest.skip("this python does not read a user site-packages")
    return base


def plan_file():
    return plan_file_with([["layers.0"], ["layers.2"]], "site_hook.json")


PROBE = "import sys; print('gcprof' in sys.modules, sys.modules.get('gcprof').__file__ " \
        "if 'gcprof' in sys.modules else '')"


def test_inert_without_gcprof_plan():
    proc, _ = run_python(["-c", PROBE], shim=False, PYTHONUSERBASE=user_base())
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.split()[0] == "False", "gcprof imported without GCPROF_PLAN: " + proc.stdout


def test_gcprof_plan_arms_the_installed_package():
    base = user_base()
    proc, _ = run_python(["-c", PROBE], shim=False, PYTHONUSERBASE=base, GCPROF_PLAN=plan_file())
    assert proc.returncode == 0, proc.stderr
    loaded, where = proc.stdout.split()
    assert loaded == "True" and where.startswith(base), proc.stdout


def test_plan_applied_in_a_plain_python():
    # No PYTHONPATH, no gcprof record: the installed hook alone (that the
    # losses stay identical under a plan is test_plan's).
    planned, _ = run_python([TINY, "--steps", "2"], shim=False, PYTHONUSERBASE=user_base(),
                            GCPROF_PLAN=plan_file())
    loss_lines(planned)
    applied = [l for l in planned.stderr.splitlines() if "checkpointing 2 modules" in l]
    assert len(applied) == 1, planned.stderr


def test_hook_and_record_shim_together_apply_the_plan_once():
    # `gcprof verify` of a job whose python has the package installed: both
    # gcprof.pth and the shim's sitecustomize start gcprof.
    proc, _ = run_python([TINY, "--steps", "2"], PYTHONUSERBASE=user_base(), GCPROF_PLAN=plan_file())
    loss_lines(proc)
    applied = [l for l in proc.stderr.splitlines() if "checkpointing" in l]
    assert len(applied) == 1, proc.stderr

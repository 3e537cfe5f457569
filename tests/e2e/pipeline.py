"""Helpers for the end-to-end tests: run the real gcprof binary on the real
samples and read back what it wrote (through `gcprof show --json` and the
SQLite file itself)."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("GCPROF_BUILD", os.path.join(ROOT, "build"))
GCPROF = os.path.join(BUILD, "bin", "gcprof")
GPT_TRAIN = os.path.join(BUILD, "bin", "gpt_train")
RESNET_TRAIN = os.path.join(BUILD, "bin", "resnet_train")
TRAIN_PY = os.path.join(ROOT, "samples", "python", "train_gpt.py")

# MKL keeps a per-thread GEMM buffer for every matrix shape it first meets in
# step 0, never freed: ~4.2-4.75 MiB each on AVX-512 hosts, about half on
# AVX2 (bench/history/recording-overhead.md). On the tests' small models that is 25-35
# MiB of a 60-300 MiB peak that no plan can free, so budgets such as 60% and
# what-if answers would depend on the host's CPU. Every job the e2e tests run
# has MKL free its buffers after each call instead (then they are ordinary
# temporaries); the advisor's handling of memory kept by a library is unit
# tested (ReplaySimulator.MemoryNeverFreedIsNotMadeAgainByAReplay).
os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")

# Small enough for CI on 2 cores, big enough that every saved tensor clears
# the default --min-bytes (1 KiB): batch * seq floats = 1 KiB.
SMALL = ["--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "64", "--batch", "4",
         "--vocab", "256", "--steps", "3"]


# For advise/verify: activations must dominate the peak as in real training,
# or no plan can reach 60% (the process's own heap is persistent memory too).
ACTIVATION_HEAVY = ["--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "128",
                    "--batch", "16", "--vocab", "256", "--steps", "3"]
# resnet_train (samples/cpp): BatchNorm in every block, 3 steps of well under a second on one core.
RESNET_SMALL = ["--layers", "4", "--width", "8", "--image", "32", "--batch", "16", "--steps", "3"]


def sample(kind, *extra, flags=SMALL):
    """argv of a sample training job: kind is "cpp", "py" or "resnet" (C++)."""
    if kind == "cpp":
        return [GPT_TRAIN, *flags, *extra]
    if kind == "resnet":
        return [RESNET_TRAIN, *flags, *extra]
    return [sys.executable, TRAIN_PY, *flags, *extra]


def tempdb(tag):
    d = tempfile.mkdtemp(prefix=f"gcprof-e2e-{tag}-")
    return os.path.join(d, "trace.db")


def gcprof(*args, check=True, env=None, **kw):
    p = subprocess.run([GCPROF, *args], capture_output=True, text=True, env=env, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"gcprof {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def record(db, argv, *flags, check=True):
    return gcprof("record", "-o", db, *flags, "--", *argv, check=check)


def show(db):
    return json.loads(gcprof("show", db, "--json").stdout)


def query(db, sql, *params):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def losses(stdout):
    """The `step <i> loss <value>` lines a sample prints."""
    out = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "step" and parts[2] == "loss":
            out.append(float(parts[3]))
    return out


# The default budgets a plan must verify at (the budgets `advise` plans by default).
BUDGET_LADDER = ("60%", "75%", "90%")


def advise_and_verify(db, budget, plan_path):
    """advise --budget BUDGET -o PLAN, then verify that plan; returns
    (advise, verify, the verification's report as JSON or None when advise
    found no plan)."""
    advice = gcprof("advise", db, "--budget", budget, "-o", plan_path, check=False)
    if advice.returncode != 0:
        return advice, None, None
    verify = gcprof("verify", db, "--plan", plan_path, check=False)
    report = json.loads(gcprof("report", db, "--format", "json", check=False).stdout)
    return advice, verify, report


def ladder_problems(db, directory, budgets, gates=("gradients match",)):
    """Advises and verifies at each budget; returns what went wrong, one line
    per budget (empty when every plan verified PASS with every gate in `gates`
    present and passed)."""
    problems = []
    for budget in budgets:
        plan = os.path.join(directory, "plan-%s.json" % budget.rstrip("%"))
        advice, verify, report = advise_and_verify(db, budget, plan)
        if verify is None:
            problems.append(f"{budget}: advise exited {advice.returncode}: {advice.stderr.strip()}")
            continue
        passed = {g["name"]: g["passed"] for g in report["gates"]}
        missing = [g for g in gates if not passed.get(g)]
        if verify.returncode != 0 or report["verdict"] != "PASS" or missing:
            problems.append(f"{budget}: verify exited {verify.returncode}, verdict {report['verdict']}, "
                            f"gates not passed: {missing}\n{verify.stdout}")
    return problems

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
TRAIN_PY = os.path.join(ROOT, "samples", "python", "train_gpt.py")

# Small enough for CI on 2 cores, big enough that every saved tensor clears
# the default --min-bytes (1 KiB): batch * seq floats = 1 KiB.
SMALL = ["--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "64", "--batch", "4",
         "--vocab", "256", "--steps", "3"]


# For advise/verify: activations must dominate the peak as in real training,
# or no plan can reach 60% (the process's own heap is persistent memory too).
ACTIVATION_HEAVY = ["--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "128",
                    "--batch", "16", "--vocab", "256", "--steps", "3"]


def sample(kind, *extra, flags=SMALL):
    """argv of a sample training job: kind is "cpp" or "py"."""
    if kind == "cpp":
        return [GPT_TRAIN, *flags, *extra]
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

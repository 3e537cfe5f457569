"""End to end through the real injector: `gcprof record` of python jobs, read back with sqlite3.

Needs build/bin/gcprof and build/lib/libgcprof_inject.so (or GCPROF_BUILD=dir);
skipped (exit 77) when they are not built.
"""
import atexit
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import pytest

from harness import ROOT, TINY, clean_env, loss_lines, run_python

BUILD = os.environ.get("GCPROF_BUILD", os.path.join(ROOT, "build"))
GCPROF = os.path.join(BUILD, "bin", "gcprof")
TMP = tempfile.mkdtemp(prefix="gcprof-record-test-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)


def record(db, args, **env):
    if not (os.access(GCPROF, os.X_OK) and
            os.path.exists(os.path.join(BUILD, "lib", "libgcprof_inject.so"))):
        pytest.skip("gcprof is not built in " + BUILD)
    # The interpreter itself, not a wrapper script (pyenv's shim forks shells).
    cmd = [GCPROF, "record", "-o", db, "--", sys.executable] + list(args)
    return subprocess.run(cmd, env=clean_env(**env), cwd=ROOT, capture_output=True, text=True,
                          timeout=900)


def query(db, sql, *params):
    with sqlite3.connect(db) as c:
        return c.execute(sql, params).fetchall()


def test_recorded_tiny_model_has_steps_loss_and_paired_layer_ranges():
    db = os.path.join(TMP, "tiny.db")
    proc = record(db, [TINY, "--steps", "2", "--layers", "3"])
    losses = loss_lines(proc)
    assert losses == loss_lines(run_python([TINY, "--steps", "2", "--layers", "3"], shim=False)[0])
    (run_id, runtime, status), = query(db, "select id, runtime, status from runs")
    assert (runtime, status) == ("python", "complete"), (runtime, status)
    assert [s for s, in query(db, "select step from steps order by step")] == [0, 1]
    stored = query(db, "select step, value from scalars where name='loss' order by step")
    assert [repr(v) for _, v in stored] == [l.split()[2] for l in losses], (stored, losses)
    for step in (0, 1):
        for layer in ("layers.0", "layers.1", "layers.2"):
            rows = query(db, "select phase, start_ns, end_ns, input_bytes, output_bytes, depth "
                             "from ranges where step=? and name=? order by phase", step, layer)
            assert [r[0] for r in rows] == [1, 2], (step, layer, rows)
            (_, f0, f1, fin, fout, depth), (_, b0, b1, _, _, _) = rows
            assert f0 < f1 <= b0 < b1, (layer, rows)
            assert fin > 0 and fout > 0 and depth == 2, rows
        # Tensors the layers' forward allocated and their backward freed: saved activations.
        saved = query(db, """
            select count(*) from allocations a
            join ranges f on f.run = a.run and f.id = a.range
            join ranges b on b.run = f.run and b.name = f.name and b.phase = 2 and b.step = f.step
            where f.step = ? and f.phase = 1 and f.name like 'layers.%'
              and a.free_ns between b.start_ns and b.end_ns""", step)[0][0]
        assert saved > 0, "no allocation of a layer forward freed in its backward"


def test_plan_under_record_marks_recompute_and_keeps_forward_count():
    plan = os.path.join(TMP, "plan.json")
    with open(plan, "w") as f:
        json.dump({"format": "gcprof.plan/1", "checkpoint": [["layers.1"]]}, f)
    db = os.path.join(TMP, "plan.db")
    proc = record(db, [TINY, "--steps", "2", "--dropout", "0.1"], GCPROF_PLAN=plan)
    assert loss_lines(proc) == loss_lines(
        run_python([TINY, "--steps", "2", "--dropout", "0.1"], shim=False)[0])
    counts = dict(((s, p, n), c) for s, p, n, c in query(
        db, "select step, phase, name, count(*) from ranges group by step, phase, name"))
    for step in (0, 1):
        assert counts.get((step, 0, "recompute layers.1")) == 1, counts
        assert counts.get((step, 1, "layers.1.attn.qkv")) == 1, counts
        assert counts.get((step, 2, "layers.1")) == 1, counts


def test_bad_plan_under_record_exits_2_and_leaves_a_readable_trace():
    plan = os.path.join(TMP, "bad.json")
    with open(plan, "w") as f:
        json.dump({"format": "gcprof.plan/1", "checkpoint": [["layer.1"]]}, f)
    db = os.path.join(TMP, "bad.db")
    proc = record(db, [TINY, "--steps", "2"], GCPROF_PLAN=plan)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "did you mean 'layers.1'" in proc.stderr and "Traceback" not in proc.stderr
    (exit_code, runtime), = query(db, "select exit_code, runtime from runs")
    assert exit_code == 2 and runtime == "python", (exit_code, runtime)
    assert query(db, "select count(*) from steps")[0][0] == 0

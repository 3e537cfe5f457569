"""End to end: the C++ and python samples recorded on CPU, unmodified."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

import pipeline as p


class RecordSample:
    kind = None
    db = None

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb(f"record-{cls.kind}")
        cls.out = p.record(cls.db, p.sample(cls.kind))
        cls.summary = p.show(cls.db)

    def test_one_run_with_every_step(self):
        runs = self.summary["runs"]
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["steps"], 3)
        self.assertEqual(runs[0]["status"], "complete")
        self.assertEqual(runs[0]["dropped_events"], 0)
        self.assertEqual(len(p.losses(self.out.stdout)), 3, "the job's output must pass through")

    def test_forward_and_backward_range_for_every_layer_in_every_step(self):
        rows = p.query(self.db, "SELECT name, phase, step FROM ranges WHERE domain = 1")
        for layer in range(4):
            for step in range(3):
                for phase in (1, 2):
                    n = sum(1 for r in rows if r == (f"layers.{layer}", phase, step))
                    self.assertEqual(n, 1, f"layers.{layer} phase {phase} step {step}")

    def test_allocations_are_attributed_to_layer_ranges(self):
        rows = p.query(self.db, """
            WITH RECURSIVE up(alloc, range) AS (
              SELECT run || ':' || id, range FROM allocations WHERE range != 0
              UNION ALL SELECT up.alloc, r.parent FROM up JOIN ranges r ON r.id = up.range
              WHERE r.parent != 0)
            SELECT r.name, count(DISTINCT up.alloc) FROM up JOIN ranges r ON r.id = up.range
            WHERE r.name GLOB 'layers.[0-9]' AND r.phase = 1 GROUP BY r.name""")
        counts = dict(rows)
        for layer in range(4):
            self.assertGreater(counts.get(f"layers.{layer}", 0), 10, counts)

    def test_saved_bytes_match_an_independent_count(self):
        ref = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__),
                                                             "saved_bytes_reference.py"),
                              *p.SMALL], capture_output=True, text=True, check=True)
        expected = json.loads(ref.stdout)
        units = {u["name"]: u for u in self.summary["runs"][0]["units"]}
        for layer in range(4):
            name = f"layers.{layer}"
            got, want = units[name]["saved_bytes"], expected[name]
            self.assertLessEqual(abs(got - want), 0.10 * want, f"{name}: gcprof {got} vs reference {want}")
            self.assertGreater(units[name]["forward_ns"], 0)
            self.assertGreater(units[name]["backward_ns"], 0)


class RecordCpp(RecordSample, unittest.TestCase):
    kind = "cpp"


class RecordPython(RecordSample, unittest.TestCase):
    kind = "py"

    def test_submodules_have_qualified_names(self):
        names = {u["name"] for u in self.summary["runs"][0]["units"]}
        for sub in ("layers.0.attn", "layers.0.attn.qkv", "layers.3.mlp.fc2", "layers.2.ln1"):
            self.assertIn(sub, names)
        self.assertEqual(self.summary["runs"][0]["runtime"], "python")


class JobOutcome(unittest.TestCase):
    def test_exit_code_and_output_pass_through(self):
        db = p.tempdb("exit3")
        out = p.record(db, ["sh", "-c", "echo hello; echo oops >&2; exit 3"], check=False)
        self.assertEqual(out.returncode, 3)
        self.assertIn("hello", out.stdout)
        self.assertIn("oops", out.stderr)
        self.assertEqual(p.show(db)["runs"][-1]["status"], "failed")

    def test_sigterm_leaves_a_readable_trace_marked_interrupted(self):
        db = p.tempdb("sigterm")
        argv = p.sample("py")[:-1] + ["1000"]  # --steps 1000: runs until killed
        rec = subprocess.Popen([p.GCPROF, "record", "-o", db, "--", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline:
            time.sleep(0.5)
            if os.path.exists(db) and p.query(db, "SELECT count(*) FROM steps")[0][0] >= 2:
                break
        job = int(subprocess.check_output(["pgrep", "-P", str(rec.pid)], text=True).split()[0])
        os.kill(job, signal.SIGTERM)
        rec.communicate(timeout=60)
        self.assertEqual(rec.returncode, 128 + signal.SIGTERM)
        run = p.show(db)["runs"][-1]
        self.assertEqual(run["status"], "interrupted")
        self.assertGreaterEqual(run["steps"], 2)
        self.assertGreater(run["allocations"], 0)

    def test_recording_can_be_paused_and_resumed_from_outside(self):
        db = p.tempdb("ctl")
        argv = p.sample("py")[:-1] + ["1000"]
        rec = subprocess.Popen([p.GCPROF, "record", "--paused", "-o", db, "--", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        job = None
        try:
            printed = 0
            while printed < 2:  # two steps run unrecorded
                line = rec.stdout.readline()
                printed += line.startswith("step ")
            p.gcprof("ctl", db, "resume")
            deadline = time.time() + 120
            while time.time() < deadline and p.query(db, "SELECT count(*) FROM steps")[0][0] < 2:
                time.sleep(0.3)
            p.gcprof("ctl", db, "pause")
            time.sleep(1.0)
            paused_at, last = p.query(db, "SELECT count(*), max(step) FROM steps")[0]
            # Proof that pausing holds: the job prints three steps past the
            # last one kept (read from its own output, not waited out on the
            # clock) and none of them is kept.
            printed = -1
            while printed < last + 3:
                line = rec.stdout.readline()
                self.assertNotEqual(line, "", "the job ended while paused")
                if line.startswith("step "):
                    printed = int(line.split()[1])
            self.assertEqual(p.query(db, "SELECT count(*) FROM steps")[0][0], paused_at)
            job = int(subprocess.check_output(["pgrep", "-P", str(rec.pid)], text=True).split()[0])
        finally:
            if job:
                os.kill(job, signal.SIGTERM)
            rec.communicate(timeout=60)
        first = p.query(db, "SELECT min(step) FROM steps")[0][0]
        self.assertGreaterEqual(first, 2, "steps before `ctl resume` must not be recorded")


if __name__ == "__main__":
    unittest.main()

"""Issue 13: bad input gets a clear error (exit 2) before anything runs, and a
killed job keeps the memory it had when it died."""
import os
import signal
import subprocess
import time
import unittest

import pipeline as p


def empty_trace(tag):
    """A trace with one finished run of a job that marks nothing (fast)."""
    db = p.tempdb(tag)
    p.record(db, ["true"])
    return db


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = empty_trace("bad-input")
        cls.sample_db = p.tempdb("bad-input-sample")
        p.record(cls.sample_db, p.sample("cpp"))

    def assertRejected(self, args, words):
        r = p.gcprof(*args, check=False)
        self.assertEqual(r.returncode, 2, f"{args}: exit {r.returncode}\n{r.stderr}")
        self.assertIn(words, r.stderr, args)
        for raw in ("stoi", "stod", "json.exception", "basic_string"):
            self.assertNotIn(raw, r.stderr, f"{args}: raw library text")
        return r

    def test_bad_step_windows_are_refused_before_the_job_runs(self):
        marker = os.path.join(os.path.dirname(self.db), "ran")
        for steps in ("abc", "2:1", "3:3", "5", "-1:4", ":4", "1:x"):
            self.assertRejected(["record", "-o", self.db, "--steps", steps, "--",
                                 "touch", marker], f"--steps '{steps}'")
        self.assertFalse(os.path.exists(marker), "a refused record must not run the job")

    def test_bad_min_bytes_are_refused(self):
        for v in ("1e30", "nan", "inf", "-5", "0x10", "12 parsecs"):
            self.assertRejected(["record", "-o", self.db, "--min-bytes", v, "--", "true"],
                                "--min-bytes")

    def test_bad_budgets_and_slowdowns_are_refused(self):
        for flag, v in (("--budget", "60%%"), ("--budget", "0x10"), ("--budget", "nan"),
                        ("--budget", "1e30"), ("--max-slowdown", "-5%"),
                        ("--max-slowdown", "nan%"), ("--max-slowdown", "30")):
            self.assertRejected(["advise", self.db, flag, v], "--budget/--headroom/--max-slowdown")

    def test_a_huge_unit_depth_is_refused_in_words(self):
        self.assertRejected(["advise", self.sample_db, "--strategy", "every", "--units",
                             "depth=99999999999"], "depth must be a number")

    def test_ctl_on_a_missing_trace_creates_nothing(self):
        missing = os.path.join(os.path.dirname(self.db), "missing.db")
        self.assertRejected(["ctl", missing, "pause"], "no such trace")
        self.assertFalse(os.path.exists(missing + ".ctl"))

    def test_verify_on_a_missing_trace_creates_nothing(self):
        d = os.path.dirname(self.db)
        plan = os.path.join(d, "plan.json")
        with open(plan, "w") as f:
            f.write('{"format": "gcprof.plan/1", "budget_bytes": 1, "checkpoint": []}')
        missing = os.path.join(d, "missing-verify.db")
        self.assertRejected(["verify", missing, "--plan", plan], "missing-verify.db")
        self.assertFalse(os.path.exists(missing))

    def test_advise_to_an_unwritable_file_stores_no_plan(self):
        db = self.sample_db
        self.assertRejected(["advise", db, "--strategy", "every", "-o", "/nonexistent/dir/p.json"],
                            "/nonexistent/dir/p.json")
        self.assertEqual(p.query(db, "SELECT count(*) FROM plans")[0][0], 0)


class LeftoverControl(unittest.TestCase):
    def test_a_stale_pause_does_not_pause_a_new_recording(self):
        db = p.tempdb("stale-ctl")
        with open(db + ".ctl", "w") as f:
            f.write("pause\n")
        p.record(db, p.sample("cpp"))
        self.assertEqual(p.show(db)["runs"][-1]["steps"], 3)


class KilledJob(unittest.TestCase):
    """SIGKILL (as the OOM killer sends it) gives the job no chance to flush:
    the memory it held must already be in the trace."""

    def live_bytes_after_step(self, db, step):
        (run, end), = p.query(db, "SELECT run, end_ns FROM steps WHERE step = ? "
                                  "ORDER BY run DESC LIMIT 1", step)
        return p.query(db, "SELECT coalesce(sum(bytes), 0) FROM allocations WHERE run = ? AND "
                           "alloc_ns <= ? AND (free_ns < 0 OR free_ns > ?)", run, end, end)[0][0]

    def test_sigkill_keeps_the_memory_live_at_death(self):
        clean = p.tempdb("clean")
        p.record(clean, p.sample("cpp"))
        want = self.live_bytes_after_step(clean, 1)

        db = p.tempdb("sigkill")
        argv = p.sample("cpp")[:-1] + ["100000"]  # --steps 100000: runs until killed
        rec = subprocess.Popen([p.GCPROF, "record", "-o", db, "--", *argv],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.time() + 120
            while time.time() < deadline:
                time.sleep(0.1)
                if os.path.exists(db) and p.query(db, "SELECT count(*) FROM steps")[0][0] >= 2:
                    break
            job = int(subprocess.check_output(["pgrep", "-P", str(rec.pid)], text=True).split()[0])
            os.kill(job, signal.SIGKILL)
        finally:
            rec.communicate(timeout=60)
        self.assertEqual(rec.returncode, 128 + signal.SIGKILL)
        got = self.live_bytes_after_step(db, 1)
        self.assertGreaterEqual(got, 0.9 * want,
                                f"live after step 1: {got} B after SIGKILL vs {want} B in a clean run")
        self.assertEqual(p.show(db)["runs"][-1]["status"], "interrupted")


if __name__ == "__main__":
    unittest.main()


class NonUtf8(unittest.TestCase):
    def test_a_latin1_argument_runs_the_job_and_the_trace_reads_back(self):
        db = p.tempdb("latin1")
        r = subprocess.run([p.GCPROF, "record", "-o", db, "--", "/bin/echo", b"caf\xe9"],
                           capture_output=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"caf\xe9\n", "the job gets its argv byte for byte")
        run = p.show(db)["runs"][-1]
        self.assertEqual(run["status"], "complete")
        self.assertIn("caf\ufffd", run["command"])


class ControlAndSteps(unittest.TestCase):
    def test_ctl_resume_outside_the_steps_window_records_nothing(self):
        db = p.tempdb("resume-steps")
        argv = p.sample("cpp")[:-1] + ["100000"]
        rec = subprocess.Popen([p.GCPROF, "record", "--paused", "--steps", "1000000:", "-o", db,
                                "--", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        job = None
        try:
            printed = 0
            while printed < 2:
                printed += rec.stdout.readline().startswith("step ")
            p.gcprof("ctl", db, "resume")
            time.sleep(1.5)  # the writer polls the .ctl every 100 ms
            job = int(subprocess.check_output(["pgrep", "-P", str(rec.pid)], text=True).split()[0])
        finally:
            if job:
                os.kill(job, signal.SIGTERM)
            rec.communicate(timeout=60)
        self.assertEqual(p.query(db, "SELECT count(*) FROM steps")[0][0], 0,
                         "`ctl resume` opened the window before step 1000000")
        self.assertEqual(p.query(db, "SELECT count(*) FROM ranges")[0][0], 0)


class HostileNames(unittest.TestCase):
    def test_show_does_not_print_terminal_escapes_from_module_names(self):
        import shutil
        import sqlite3
        db = p.tempdb("escapes")
        shutil.copy(os.path.join(p.ROOT, "tests", "fuzz", "corpus", "trace", "small.db"), db)
        con = sqlite3.connect(db)
        con.execute("UPDATE ranges SET name = ?", ("\x1b]0;owned\x07\x1b[31mlayers.0",))
        con.commit()
        con.close()
        out = p.gcprof("show", db).stdout
        self.assertIn("layers.0", out)
        self.assertNotIn("\x1b", out)
        self.assertNotIn("\x07", out)


class RecorderKilled(unittest.TestCase):
    def test_sigkill_of_gcprof_record_does_not_orphan_the_job(self):
        db = p.tempdb("recorder-killed")
        argv = p.sample("cpp")[:-1] + ["100000"]
        rec = subprocess.Popen([p.GCPROF, "record", "-o", db, "--", *argv],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        job = None
        while time.time() < deadline and job is None:
            time.sleep(0.2)
            kids = subprocess.run(["pgrep", "-P", str(rec.pid)], capture_output=True, text=True)
            job = int(kids.stdout.split()[0]) if kids.stdout.split() else None
        self.assertIsNotNone(job)
        rec.kill()
        rec.wait(timeout=30)
        deadline = time.time() + 30
        while time.time() < deadline and os.path.exists(f"/proc/{job}"):
            with open(f"/proc/{job}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":  # dead, waiting for init
                    break
            time.sleep(0.2)
        alive = os.path.exists(f"/proc/{job}")
        if alive:
            with open(f"/proc/{job}/stat") as f:
                alive = f.read().split(")")[-1].split()[0] != "Z"
        if alive:
            os.kill(job, signal.SIGKILL)
        self.assertFalse(alive, "the job ran on after its recorder was killed")

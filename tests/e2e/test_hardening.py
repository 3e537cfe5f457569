"""Bad input gets a clear error (exit 2) before anything runs, and a
killed job keeps the memory it had when it died."""
import json
import os
import signal
import subprocess
import sys
import tempfile
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
                        ("--max-slowdown", "nan%"), ("--max-slowdown", "30"), ("--headroom", "120%"),
                        ("--headroom", "5"), ("--headroom", "lots")):
            # The option at fault is named, not a list of three.
            r = self.assertRejected(["advise", self.db, "--budget", "60%", flag, v]
                                    if flag != "--budget" else ["advise", self.db, flag, v], flag + ": ")
            for other in {"--budget", "--headroom", "--max-slowdown"} - {flag}:
                self.assertNotIn(other, r.stderr, (flag, v))

    def test_what_if_options_without_what_if_are_refused(self):
        # They were ignored: `--size 32 -o plan.json` wrote a plan for the
        # recorded size, which the user would then run at 32.
        for extra in (["--size", "32"], ["--side"], ["--size-step", "16"], ["--fit", "affine"],
                      ["--size-of", "1=4"], ["--max-size", "64"]):
            self.assertRejected(["advise", self.db, "--budget", "60%", *extra],
                                extra[0] + " requires --what-if")
        self.assertRejected(["advise", self.db, "--budget", "60%", "--what-if", ""],
                            "give the size's name")

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


class TraceClock(unittest.TestCase):
    def test_plans_are_stamped_on_the_trace_clock(self):
        """docs/schema.md: every time in a trace is CLOCK_MONOTONIC ns (advise
        stamped plans with the wall clock)."""
        db = p.tempdb("clock")
        p.record(db, p.sample("cpp"))
        p.gcprof("advise", db, "--strategy", "every", "-o", os.path.join(os.path.dirname(db), "p.json"))
        (created,), = p.query(db, "SELECT created_ns FROM plans")
        (started,), = p.query(db, "SELECT started_ns FROM runs WHERE id = 1")
        self.assertLessEqual(started, created)
        self.assertLessEqual(created, time.monotonic_ns())


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
            # docs/recording.md: a killed job's trace holds its memory except blocks
            # younger than about 0.35 s (the live-write age and the rounds in flight);
            # kill once step 1's blocks are past that window.
            time.sleep(0.5)
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
            time.sleep(1.5)  # the writer polls the .ctl every 200 ms
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

    def test_advise_does_not_print_escapes_or_line_breaks_from_module_names(self):
        """A CR/LF in a name must not forge a line of a CI log (`::error::`),
        nor ESC or BEL reach the terminal, in the tables, the peak's place,
        the refusal and the error that lists the modules seen."""
        import shutil
        import sqlite3
        db = p.tempdb("advise-escapes")
        shutil.copy(os.path.join(p.ROOT, "tests", "fuzz", "corpus", "trace", "small.db"), db)
        con = sqlite3.connect(db)
        con.execute("UPDATE ranges SET name = ?", ("layers.0\x1b[31m\r\n::error::forged\x07",))
        con.commit()
        con.close()
        runs = [p.gcprof("advise", db, "--budget", "90%", "--strategy", "every", "--units", r"layers[\s\S]*",
                         "--no-store", check=False),
                p.gcprof("advise", db, "--budget", "90%", "--units", "nomatch", check=False),
                p.gcprof("advise", db, "--budget", "1%", "--units", r"layers[\s\S]*", "--no-store", check=False)]
        self.assertIn("layers.0?[31m??::error::forged?", runs[0].stdout)
        # The out-of-reach budget's explanation keeps its own lines (each
        # indented), while the name's line break still prints as '?'.
        refusal = runs[2].stderr
        self.assertEqual(runs[2].returncode, 1, refusal)
        self.assertGreater(len(refusal.splitlines()), 1, refusal)
        self.assertNotIn("?  ", refusal)
        for r in runs:
            out = r.stdout + r.stderr
            for raw in ("\x1b", "\r", "\x07"):
                self.assertNotIn(raw, out)
            self.assertFalse([l for l in out.splitlines() if l.startswith("::error::")], out)


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


class LockedTrace(unittest.TestCase):
    def test_a_locked_trace_says_it_is_locked(self):
        import sqlite3
        db = empty_trace("locked")
        con = sqlite3.connect(db, isolation_level=None)
        try:
            con.execute("PRAGMA locking_mode=EXCLUSIVE")
            con.execute("BEGIN EXCLUSIVE")
            r = p.gcprof("show", db, check=False)
        finally:
            con.close()
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("locked by another process", r.stderr)
        self.assertNotIn("damaged", r.stderr)
        self.assertNotIn("not a readable SQLite file", r.stderr)

    def test_record_waits_30_s_for_a_locked_trace(self):
        """docs/recording.md: the recorder waits 30 s for a lock. Held for 12 s
        (past the 10 s a reader waits), `record` must wait it out and record."""
        import sqlite3
        import threading
        db = empty_trace("locked-record")
        con = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        con.execute("BEGIN EXCLUSIVE")
        release = threading.Timer(12, con.close)
        release.start()
        try:
            r = p.gcprof("record", "-o", db, "--", "true", check=False)
        finally:
            release.cancel()
            con.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(p.show(db)["runs"]), 2)


# A python job that makes many recorded blocks (2 KiB each, over --min-bytes)
# and exits with its own code, so that `record` passing it on shows.
BLOCKS_JOB = [sys.executable, "-c",
              "import sys\nfor _ in range(int(sys.argv[1])): bytearray(2048)\n"
              "print('job done', flush=True); sys.exit(3)"]


def in_own_mounts(test, script):
    """Runs `script` (sh) as root of a private user and mount namespace, where
    it may mount a small tmpfs: a real full or read-only disk without touching
    the machine's mounts. Skips where the kernel forbids it."""
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        test.skipTest("no user+mount namespaces here (unshare -rm): " + probe.stderr.strip())
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                          text=True, timeout=300)


def sh_quote(args):
    return " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)


class DiskProblems(unittest.TestCase):
    """A full or read-only disk gives a clear error; the job
    is not started when nothing could be recorded, and is never changed by us
    when the disk fills during the run."""

    def test_a_disk_full_from_the_start_does_not_start_the_job(self):
        d = tempfile.mkdtemp(prefix="gcprof-e2e-full0-")
        os.mkdir(os.path.join(d, "m"))
        marker = os.path.join(d, "ran")
        r = in_own_mounts(self, f"""
            mount -t tmpfs -o size=2m tmpfs {d}/m
            {sh_quote([p.GCPROF])} record -o {d}/m/trace.db -- touch {marker}
        """)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("free on its disk", r.stderr)
        self.assertFalse(os.path.exists(marker), "the job ran although nothing could be recorded")

    def test_a_disk_that_fills_up_keeps_the_job_and_its_exit_code(self):
        d = tempfile.mkdtemp(prefix="gcprof-e2e-full-")
        os.mkdir(os.path.join(d, "m"))
        r = in_own_mounts(self, f"""
            mount -t tmpfs -o size=5m tmpfs {d}/m
            {sh_quote([p.GCPROF, "record", "-o", d + "/m/trace.db", "--", *BLOCKS_JOB, "400000"])}
            echo "record exit $?"
        """)
        self.assertIn("job done", r.stdout, r.stderr)
        self.assertIn("record exit 3", r.stdout, r.stderr)
        self.assertIn("recording stopped, the job continues", r.stderr)

    def test_a_trace_on_a_read_only_mount_reads_and_refuses_writes(self):
        d = tempfile.mkdtemp(prefix="gcprof-e2e-ro-")
        os.mkdir(os.path.join(d, "m"))
        marker = os.path.join(d, "ran")
        g = sh_quote([p.GCPROF])
        r = in_own_mounts(self, f"""
            mount -t tmpfs -o size=64m tmpfs {d}/m
            {g} record -o {d}/m/trace.db -- true 2>/dev/null
            mount -o remount,ro {d}/m
            {g} show {d}/m/trace.db --json > {d}/show.json; echo "show exit $?"
            {g} record -o {d}/m/trace.db -- touch {marker}; echo "record exit $?"
        """)
        self.assertIn("show exit 0", r.stdout, r.stderr)
        with open(os.path.join(d, "show.json")) as f:
            self.assertEqual(len(json.load(f)["runs"]), 1)
        self.assertIn("record exit 2", r.stdout, r.stderr)
        self.assertIn("Read-only file system", r.stderr)
        self.assertFalse(os.path.exists(marker), "the job ran although nothing could be recorded")


class ConcurrentRecords(unittest.TestCase):
    def test_two_records_into_one_trace_keep_their_own_runs(self):
        db = p.tempdb("concurrent")
        first = subprocess.Popen([p.GCPROF, "record", "-o", db, "--", "sleep", "1"],
                                 stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline and not os.path.exists(db):
            time.sleep(0.05)
        second = subprocess.Popen([p.GCPROF, "record", "-o", db, "--", "sleep", "4"],
                                  stderr=subprocess.PIPE, text=True)
        err1 = first.communicate(timeout=60)[1]
        err2 = second.communicate(timeout=60)[1]
        self.assertEqual((first.returncode, second.returncode), (0, 0), err1 + err2)
        runs = {r["id"]: r for r in p.show(db)["runs"]}
        self.assertEqual(len(runs), 2)
        for r in runs.values():
            self.assertEqual(r["status"], "complete", r)
            self.assertNotEqual(r["pid"], 0, r)
        self.assertIn("run 1 (complete", err1)
        self.assertNotIn("run 2 (", err1, "the first record took the second's run as its own")
        self.assertIn("run 2 (complete", err2)


# A job that allocates 2000 blocks of 3334 bytes (bytearray(3333): a size
# nothing else in it uses) once it reads a line, then waits to be stopped.
LOCKED_TRACE_JOB = [sys.executable, "-c",
                    "import sys, time\nprint('started', flush=True)\nsys.stdin.readline()\n"
                    "x = [bytearray(3333) for _ in range(2000)]\n"
                    "print('ready', flush=True)\ntime.sleep(60)"]


def stop_while_locked(db, gcprof_args, stop):
    """Runs `gcprof GCPROF_ARGS -- LOCKED_TRACE_JOB` on the trace DB that another
    connection locks from before the job allocates until 3 s after `stop(job)`
    told it to stop; returns how many of its 2000 blocks reached its run (the
    newest in DB)."""
    import sqlite3
    job = subprocess.Popen([p.GCPROF, *gcprof_args, "--", *LOCKED_TRACE_JOB],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    assert job.stdout.readline().strip() == "started"
    con = sqlite3.connect(db, isolation_level=None, timeout=30)
    con.execute("BEGIN EXCLUSIVE")  # from here on the job's writer cannot commit
    job.stdin.write("go\n")
    job.stdin.flush()
    assert job.stdout.readline().strip() == "ready"
    stop(job)
    time.sleep(3)
    con.execute("ROLLBACK")
    con.close()
    out, err = job.communicate(timeout=120)
    rows = p.query(db, "SELECT count(*) FROM allocations WHERE bytes = 3334 "
                       "AND run = (SELECT max(id) FROM runs)")[0][0]
    return job, out + err, rows


class FlushWait(unittest.TestCase):
    """SIGTERM: the job waits at most --flush-wait for its events to reach the
    trace. Here the trace is locked for 3 s when the job is told to stop."""

    def stop_while_locked(self, flush_wait):
        def sigterm_the_job(job):
            kids = subprocess.run(["pgrep", "-P", str(job.pid)], capture_output=True, text=True)
            os.kill(int(kids.stdout.split()[0]), signal.SIGTERM)
        db = p.tempdb("flush-wait")
        job, out, rows = stop_while_locked(db, ["record", "-o", db, "--flush-wait", flush_wait],
                                           sigterm_the_job)
        self.assertEqual(job.returncode, 128 + signal.SIGTERM, out)
        return rows

    def test_a_long_flush_wait_outlasts_the_lock(self):
        self.assertGreaterEqual(self.stop_while_locked("30"), 2000)

    def test_a_short_flush_wait_lets_the_job_die_first(self):
        self.assertLess(self.stop_while_locked("0.2"), 1000)

    def test_bad_flush_waits_are_refused(self):
        for v in ("-1", "nan", "1e9", "soon"):
            r = p.gcprof("record", "-o", p.tempdb("flush-bad"), "--flush-wait", v, "--", "true",
                         check=False)
            self.assertEqual(r.returncode, 2, v)
            self.assertIn("--flush-wait", r.stderr)


class VerifyFlushWait(unittest.TestCase):
    """verify --flush-wait, as record's: the re-run's processes, stopped by
    --timeout, wait that long for their events (and are not SIGKILLed before)."""

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("verify-flush")
        # One intra-op thread: on a loaded machine the sample's BLAS keeps a
        # ~4 MiB buffer per thread it starts, across steps, which no plan can
        # free, and --budget 90% is then out of reach (the plan is all this
        # test needs).
        p.gcprof("record", "-o", cls.db, "--", *p.sample("cpp"),
                 env=dict(os.environ, OMP_NUM_THREADS="1"))
        cls.plan = os.path.join(os.path.dirname(cls.db), "plan.json")
        p.gcprof("advise", cls.db, "--budget", "90%", "-o", cls.plan)

    def stopped_by_the_timeout(self, flush_wait):
        job, out, rows = stop_while_locked(
            self.db, ["verify", self.db, "--plan", self.plan, "--timeout", "4", "--flush-wait", flush_wait],
            lambda job: time.sleep(4))  # the job is ended by the verify timeout meanwhile
        self.assertEqual(job.returncode, 1, out)
        self.assertIn("the job ran past 4 s", out)
        return rows

    def test_a_long_flush_wait_outlasts_the_lock(self):
        self.assertGreaterEqual(self.stopped_by_the_timeout("30"), 2000)

    def test_a_short_flush_wait_lets_the_job_die_first(self):
        self.assertLess(self.stopped_by_the_timeout("0.2"), 1000)

    def test_bad_flush_waits_are_refused(self):
        r = p.gcprof("verify", self.db, "--plan", self.plan, "--flush-wait", "soon", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--flush-wait 'soon'", r.stderr)

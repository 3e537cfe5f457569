"""verify re-runs what a trace says: it shows the command, its directory and
the environment before it runs anything, never restores what loads code
into the job, and a re-run that recorded nothing does not pass."""
import json
import os
import subprocess
import sys
import unittest

import pipeline as p

HERE = os.path.dirname(os.path.abspath(__file__))


def none_plan(db, path):
    p.gcprof("advise", db, "--strategy", "none", "-o", path)
    return path


def gates(db):
    report = json.loads(p.gcprof("report", db, "--format", "json", check=False).stdout)
    return report, {g["name"]: g for g in report["gates"]}


class VerifyShowsWhatItRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("verify-shows")
        cls.dir = os.path.dirname(cls.db)
        p.record(cls.db, p.sample("cpp"))
        cls.plan = none_plan(cls.db, os.path.join(cls.dir, "none.json"))
        # A trace from someone else: its command dumps the environment the
        # job gets, and its stored environment tries to load code.
        cls.env_file = os.path.join(cls.dir, "env.txt")
        argv = ["sh", "-c", 'env > "$0"; exec "$@"', cls.env_file, *p.sample("cpp")]
        stored = {"OMP_NUM_THREADS": "1", "LD_PRELOAD": "/nonexistent/evil.so",
                  "LD_LIBRARY_PATH": "/nonexistent", "CUDA_INJECTION64_PATH": "/nonexistent/evil.so",
                  "GCPROF_DB": "/nonexistent/other.db", "PYTHONPATH": "/nonexistent/shim",
                  "EDITOR": "vi"}
        con = __import__("sqlite3").connect(cls.db)
        con.execute("UPDATE runs SET command = ?, env = ?", (json.dumps(argv), json.dumps(stored)))
        con.commit()
        con.close()

    def test_dry_run_prints_command_directory_and_environment_and_runs_nothing(self):
        runs = len(p.show(self.db)["runs"])
        out = p.gcprof("verify", self.db, "--plan", self.plan, "--dry-run")
        err = out.stderr
        self.assertIn("command:   sh -c ", err)
        self.assertIn(self.env_file, err)
        self.assertIn(p.GPT_TRAIN, err)
        self.assertIn("directory: ", err)
        self.assertIn("    OMP_NUM_THREADS=1\n", err)
        for name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "CUDA_INJECTION64_PATH", "GCPROF_DB", "PYTHONPATH"):
            self.assertIn(f"not restored: {name}=", err)
        self.assertIn("not restored: EDITOR=vi (not a training setting", err)
        self.assertFalse(os.path.exists(self.env_file), "--dry-run ran the job")
        self.assertEqual(len(p.show(self.db)["runs"]), runs, "--dry-run wrote a run")

    def test_loader_and_injector_variables_are_never_restored(self):
        out = p.gcprof("verify", self.db, "--plan", self.plan, check=False)
        self.assertIn("not restored: LD_PRELOAD=/nonexistent/evil.so", out.stderr)
        with open(self.env_file) as f:
            env = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
        self.assertEqual(env.get("OMP_NUM_THREADS"), "1")
        self.assertIn("libgcprof_inject.so", env["LD_PRELOAD"])
        self.assertNotIn("evil", env["LD_PRELOAD"])
        self.assertNotIn("/nonexistent", env.get("LD_LIBRARY_PATH", ""))
        self.assertNotIn("evil", env.get("CUDA_INJECTION64_PATH", ""))
        self.assertEqual(env["GCPROF_DB"], self.db)
        self.assertNotIn("/nonexistent/shim", env.get("PYTHONPATH", ""))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        _, g = gates(self.db)
        self.assertTrue(g["run recorded"]["passed"], g["run recorded"])

    def test_a_command_that_hides_itself_is_printed_escaped(self):
        out = p.gcprof("verify", self.db, "--plan", self.plan, "--dry-run", "--",
                       "true", "\x1b[2K\rlooks harmless")
        self.assertNotIn("\x1b", out.stderr)
        self.assertNotIn("\r", out.stderr)
        self.assertIn("command:   true $'\\x1B[2K\\x0Dlooks harmless'", out.stderr)

    def test_the_printed_command_is_the_command_when_pasted_into_a_shell(self):
        # Spaces, quotes, $, backslashes, UTF-8 text, controls and bytes that
        # are not UTF-8: bash reads each printed word back as the argument.
        args = ["plain", "a b", "it's", "caf\u00e9 $HOME `x`", "back\\slash\\", "\x1b[2K\rhidden",
                "\u009b31m", os.fsdecode(b"not utf-8 \xff\xfe '")]
        out = subprocess.run([p.GCPROF, "verify", self.db, "--plan", self.plan, "--dry-run", "--",
                              "printf", "%s\\0", *args], capture_output=True)
        line = [l for l in out.stderr.split(b"\n") if l.startswith(b"  command:   ")]
        self.assertEqual(len(line), 1, out.stderr)
        self.assertNotIn(b"\x1b", out.stderr)
        self.assertNotIn(b"\xc2\x9b", out.stderr)
        pasted = subprocess.run(["bash", "-c", line[0][len(b"  command:   "):].decode()], capture_output=True)
        self.assertEqual(pasted.stdout.split(b"\0")[:-1], [os.fsencode(a) for a in args])

    def test_a_job_that_records_nothing_fails_the_gates(self):
        out = p.gcprof("verify", self.db, "--plan", self.plan, "--", "true", check=False)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("[FAIL] run recorded", out.stdout)
        self.assertIn("[FAIL] peak within budget", out.stdout)
        report, g = gates(self.db)
        self.assertEqual(report["verdict"], "FAIL")

    def test_losses_that_differ_come_with_a_hint_about_determinism(self):
        # Another seed stands for a job that is not deterministic.
        out = p.gcprof("verify", self.db, "--plan", self.plan, "--", *p.sample("cpp", "--seed", "7"),
                       check=False)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("[FAIL] losses match", out.stdout)
        hint = [l for l in out.stdout.splitlines() if l.startswith("hint: ")]
        self.assertEqual(len(hint), 1, out.stdout)
        for words in ("checkpoints nothing", "deterministic", "torch.manual_seed",
                      "use_deterministic_algorithms", "--strategy none"):
            self.assertIn(words, hint[0])


class ResumedMidStep(unittest.TestCase):
    """record --paused, then `ctl resume` in the middle of a step: that
    step's loss is the step's, not step -1's, and the `none` plan's losses
    match the baseline's."""

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("resume-mid-step")
        cls.dir = os.path.dirname(cls.db)
        job = [sys.executable, os.path.join(HERE, "resume_job.py"), "--gcprof", p.GCPROF, "--resume-at", "1"]
        cls.baseline = p.record(cls.db, job, "--paused")
        cls.plan = none_plan(cls.db, os.path.join(cls.dir, "none.json"))
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan, check=False)

    def test_the_open_steps_loss_keeps_its_step(self):
        steps = [s for (s,) in p.query(self.db, "SELECT step FROM scalars WHERE name = 'loss' AND run = 1 "
                                                "ORDER BY step")]
        self.assertEqual(steps, [1, 2, 3])

    def test_the_none_plans_losses_match_the_baseline(self):
        _, g = gates(self.db)
        self.assertTrue(g["losses match"]["passed"], g["losses match"]["detail"] + self.verify.stdout)
        self.assertNotIn("missing", g["losses match"]["detail"])
        self.assertEqual(p.losses(self.verify.stdout), p.losses(self.baseline.stdout))


class MessagesOnBrokenTraces(unittest.TestCase):
    """What a damaged trace, a full disk and a read-only disk are called."""

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("verify-messages")
        cls.dir = os.path.dirname(cls.db)
        p.record(cls.db, p.sample("cpp"))
        cls.plan = none_plan(cls.db, os.path.join(cls.dir, "none.json"))

    def test_a_truncated_trace_is_called_damaged_in_one_sentence(self):
        cut = os.path.join(self.dir, "cut.db")
        with open(self.db, "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[:os.path.getsize(self.db) // 2])
        for verb in (["show", cut], ["advise", cut], ["verify", cut, "--plan", self.plan]):
            r = p.gcprof(*verb, check=False)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(f"{cut}: damaged or cut short (SQLite: database disk image is malformed); ", r.stderr)
            self.assertNotIn("malformed not", r.stderr)

    def test_a_full_and_a_read_only_disk_are_called_so(self):
        from test_hardening import in_own_mounts, sh_quote
        d = os.path.join(self.dir, "disk")
        os.mkdir(d)
        os.mkdir(os.path.join(d, "m"))
        g = sh_quote([p.GCPROF])
        r = in_own_mounts(self, f"""
            mount -t tmpfs -o size=32m tmpfs {d}/m
            cp {self.db} {d}/m/trace.db
            dd if=/dev/zero of={d}/m/fill bs=64k 2>/dev/null
            {g} verify {d}/m/trace.db --plan {self.plan}; echo "full exit $?"
            rm {d}/m/fill
            mount -o remount,ro {d}/m
            {g} verify {d}/m/trace.db --plan {self.plan}; echo "read-only exit $?"
        """)
        self.assertIn("full exit 2", r.stdout, r.stderr)
        self.assertIn(f"{d}/m/trace.db: the disk is full", r.stderr)
        self.assertNotIn("damaged", r.stderr)
        self.assertIn("read-only exit 2", r.stdout, r.stderr)
        self.assertIn("Read-only file system", r.stderr)
        self.assertIn("copy it to a writable disk", r.stderr)
        self.assertNotIn("no such file", r.stderr)


if __name__ == "__main__":
    unittest.main()

"""A recorded python job keeps its own behaviour and its helper processes
stay out of the way: Python's signal handlers are its own (Ctrl-C raises
KeyboardInterrupt, multiprocessing's forkserver runs), DataLoader workers
make no runs, and advise and verify take the process that trained, not the
newest run (a data-prep subprocess ran before it)."""
import json
import os
import sys
import unittest

import pipeline as p

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_process_job.py")


def job(*args):
    return [sys.executable, JOB, *args]


def steps_of(db, run):
    return p.query(db, "SELECT count(*) FROM steps WHERE run = ?", run)[0][0]


class PythonSignals(unittest.TestCase):
    def test_ctrl_c_raises_keyboard_interrupt_as_without_gcprof(self):
        db = p.tempdb("signals-caught")
        r = p.record(db, job("--interrupt", "caught"), check=False)
        # The job's own handler ran and chose its exit code.
        self.assertIn("interrupted: checkpoint saved", r.stdout, r.stderr)
        self.assertEqual(r.returncode, 5, r.stderr)
        # SIGINT is Python's own; SIGTERM's handler is gcprof's from the start
        # (a job stopped early still flushes), which getsignal() calls None.
        self.assertIn("SIGINT=<built-in function default_int_handler> SIGTERM=None", r.stdout)
        run = p.show(db)["runs"][0]
        self.assertEqual((run["status"], run["exit_code"]), ("failed", 5))
        self.assertEqual(steps_of(db, run["id"]), 3)

    def test_an_uncaught_keyboard_interrupt_keeps_every_step(self):
        # Python dies of SIGINT at its default action after finalising: the
        # run is finished first, as our handler would have.
        db = p.tempdb("signals-uncaught")
        r = p.record(db, job("--interrupt", "uncaught"), check=False)
        self.assertEqual(r.returncode, 130, r.stderr)
        self.assertIn("KeyboardInterrupt", r.stderr)
        run = p.show(db)["runs"][0]
        self.assertEqual((run["status"], run["exit_code"]), ("interrupted", 130))
        self.assertEqual(steps_of(db, run["id"]), 3)

    def test_a_forkserver_data_loader_runs(self):
        # The forkserver restores the handlers signal.getsignal() gave it; it
        # died of "signal handler must be signal.SIG_IGN, ..." when ours were
        # in before Python's.
        db = p.tempdb("signals-forkserver")
        r = p.record(db, job("--loader", "forkserver", "--workers", "1", "--steps", "2"), check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("TypeError", r.stderr)
        self.assertEqual(len(p.losses(r.stdout)), 2)


class HelperProcesses(unittest.TestCase):
    def test_spawned_data_loader_workers_make_no_runs(self):
        db = p.tempdb("children-spawn")
        r = p.record(db, job("--loader", "spawn", "--workers", "2"))
        self.assertEqual(len(p.losses(r.stdout)), 3)
        runs = p.show(db)["runs"]
        self.assertEqual([run["id"] for run in runs], [1],
                         "a DataLoader worker made a run: " + json.dumps([x["command"] for x in runs]))
        self.assertEqual(steps_of(db, 1), 3)
        # A plan applied to the job leaves the workers' transform modules
        # alone: a worker that applied it to its Identity died of "names not
        # found", and the DataLoader with it.
        plan = os.path.join(os.path.dirname(db), "plan.json")
        p.gcprof("advise", db, "--budget", "1GiB", "--strategy", "every", "-o", plan)
        applied = p.gcprof("apply", plan, "--", *job("--loader", "spawn", "--workers", "2"), check=False)
        self.assertEqual(applied.returncode, 0, applied.stderr)
        self.assertEqual(p.losses(applied.stdout), p.losses(r.stdout))

    def test_advise_and_verify_take_the_training_process_not_the_newest_run(self):
        db = p.tempdb("children-prep")
        plain = p.record(db, job("--prep"))
        self.assertIn("prepared", plain.stdout)
        runs = p.show(db)["runs"]
        self.assertEqual(len(runs), 2, "the data-prep subprocess, which ran a module, has a run")
        training = runs[0]["id"]  # the process record started, recorded first
        self.assertGreater(runs[1]["id"], training)
        plan = os.path.join(os.path.dirname(db), "plan.json")
        advice = p.gcprof("advise", db, "--budget", "1GiB", "--strategy", "every", "-o", plan)
        self.assertIn(f"run {training} ", advice.stdout)
        with open(plan) as f:
            self.assertEqual(json.load(f)["trace_run"], training)
        verify = p.gcprof("verify", db, "--plan", plan, check=False)
        report = json.loads(p.gcprof("report", db, "--format", "json", check=False).stdout)
        rerun = [x for x in p.show(db)["runs"] if x["baseline_run"] == training]
        self.assertEqual(len(rerun), 2, "the re-run and its data-prep subprocess")
        root = min(x["id"] for x in rerun)
        compared = p.query(db, "SELECT run FROM verifications")[0][0]
        self.assertEqual(compared, root,
                         f"compared run {compared}, not the re-run of the training process\n{verify.stdout}")
        gates = {g["name"]: g["passed"] for g in report["gates"]}
        self.assertTrue(gates.get("losses match"), verify.stdout)


class TransformModules(unittest.TestCase):
    def test_a_transform_called_before_the_model_is_not_the_model(self):
        # A DataLoader without workers calls the dataset's transform module
        # (no parameters) in the job's process, with grad enabled, before
        # the model: it was taken for the model, and the plan's re-run ended
        # with exit 2 ("Sequential was not called before the model's
        # (Identity) next training forward") at the batch's second sample.
        db = p.tempdb("transform-first")
        r = p.record(db, job("--transform"))
        plan = os.path.join(os.path.dirname(db), "plan.json")
        p.gcprof("advise", db, "--budget", "1GiB", "--strategy", "every", "-o", plan)
        with open(plan) as f:
            units = json.load(f)["units"]
        self.assertIn("0", units, "the model's blocks keep their own names")
        applied = p.gcprof("apply", plan, "--", *job("--transform"), check=False)
        self.assertEqual(applied.returncode, 0, applied.stderr)
        self.assertIn("checkpointing 6 modules: 0, 1, 2, 3, 4, 5", applied.stderr)
        self.assertEqual(p.losses(applied.stdout), p.losses(r.stdout))


if __name__ == "__main__":
    unittest.main()

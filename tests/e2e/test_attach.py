"""`gcprof attach PID`: a python job started plainly is attached mid-run, recorded
for a few steps and detached; it finishes as if nothing happened."""
import json
import os
import signal
import subprocess
import threading
import sys
import tempfile
import time
import unittest

import pipeline as p

# Long enough that the job is still training a few steps after the attach is
# done: the attach itself took up to 8 steps of this small model in CI.
STEPS = 24
JOB = [a if a != "3" else str(STEPS) for a in p.SMALL]
# Attached after step 3 and recorded for 4 steps: the attach itself (gdb,
# then a moment outside a forward) took up to 8 steps of this small model on
# a quiet machine, where 14 steps ended the job with 3 steps recorded.
# 200: walking the heap for the baseline takes the attach ~0.5 s more on a
# quiet machine, where 40 steps of ~20 ms ended the job before it.
LONG_STEPS = 200
LONG_JOB = [a if a != "3" else str(LONG_STEPS) for a in p.SMALL]
# torchvision's resnet18 on 64x64 images, batch 8 (tests/e2e/public_model_job.py):
# long enough for an attach after step 3 (a few steps) and its 3 steps.
RESNET_JOB = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "public_model_job.py"), "resnet18", "--steps", "40"]
# verify re-runs the whole job, twice: short, yet long enough for an attach
# after step 1 to get its 2 steps on a loaded machine.
# Long enough to outlast the attach (gdb, the heap walks) at ~20 ms a step;
# verify re-runs it whole.
VERIFY_JOB = [a if a != "3" else "150" for a in p.SMALL]

# A torch job that exits by os._exit(3) a moment after gcprof's attach library
# is loaded into it.
DIES_ONCE_ATTACHED = """
import os, sys, time, torch
x = torch.ones(64, 64)
print("ready", flush=True)
while True:
    x = x @ x / 64
    with open("/proc/self/maps") as f:
        if "libgcprof_attach" in f.read():
            time.sleep(0.5)
            os._exit(3)
    time.sleep(0.01)
"""


def plain_losses(flags=JOB):
    out = subprocess.run(p.sample("py", flags=flags), capture_output=True, text=True, check=True)
    return p.losses(out.stdout)


class Job:
    """The python sample (or argv) started plainly. Its output is read as it
    comes by threads of its own, so that the tests can wait for a step
    printed *after* some moment (attach) rather than one that may have been
    buffered before it, and so that a failure can say what the job said."""

    def __init__(self, flags=JOB, argv=None):
        self.proc = subprocess.Popen(argv or p.sample("py", flags=flags), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.err = []
        self.changed = threading.Condition()
        self.readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines)),
                        threading.Thread(target=self._read, args=(self.proc.stderr, self.err))]
        self.ended = 0
        for r in self.readers:
            r.start()

    def _read(self, stream, into):
        for line in stream:
            with self.changed:
                into.append(line)
                self.changed.notify_all()
        with self.changed:
            self.ended += 1
            self.changed.notify_all()

    def steps_printed(self):
        with self.changed:  # a Condition's lock is reentrant: _wait's tests call this
            return sum(line.startswith("step ") for line in self.lines)

    def _wait(self, done, what):
        with self.changed:
            if not self.changed.wait_for(lambda: done() or self.ended == 2, timeout=600):
                raise AssertionError("the job printed no %s in 600 s" % what)
            if not done():
                raise AssertionError("the job ended before %s:\n%s" % (what, self.stderr()))

    def wait_for_step(self, step):
        self._wait(lambda: any(line.startswith(f"step {step} ") for line in self.lines),
                   f"step {step}")

    def wait_for_more_steps(self, count, since):
        """Until `count` steps were printed after `since` (a steps_printed())."""
        self._wait(lambda: self.steps_printed() >= since + count, f"{count} more steps")

    def stderr(self):
        return "".join(self.err)

    def kill(self):
        self.proc.kill()
        self.finish()

    def finish(self):
        self.proc.wait(timeout=600)
        for r in self.readers:
            r.join()
        return self.proc.returncode, p.losses("".join(self.lines)), self.stderr()


def attach(pid, db, *flags, **kw):
    return subprocess.Popen([p.GCPROF, "attach", str(pid), "-o", db, *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def session_dir(pid):
    """Where `gcprof attach` keeps a session's files (cli/attach_command.cpp)."""
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"gcprof-attach-{pid}")


def threads_of(pid):
    """The state and stacks of a job's threads, for a failure's message: an
    attach that never completed is explained by where the job stands."""
    try:
        with open(f"/proc/{pid}/status") as f:
            state = next((line for line in f if line.startswith("State:")), "State: ?\n")
        # libtorch's symbols would take gdb minutes: libc, python and ours.
        out = subprocess.run(["gdb", "-q", "-nx", "-batch", "-iex", "set auto-solib-add off",
                              "-p", str(pid), "-ex", "sharedlibrary libc|python|gcprof",
                              "-ex", "thread apply all bt 12"], capture_output=True, text=True,
                             timeout=120)
        return state + out.stdout[-6000:]
    except (OSError, subprocess.SubprocessError) as e:
        return f"(not read: {e})"


def wait_attached(gcprof_proc):
    """Reads gcprof attach's stderr until it says it is attached."""
    said = []
    for line in gcprof_proc.stderr:
        said.append(line)
        if line.startswith("gcprof: attached"):
            return said
    raise AssertionError("gcprof attach ended without attaching:\n" + "".join(said))


class AttachPython(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.plain = plain_losses(LONG_JOB)
        cls.db = p.tempdb("attach")
        job = Job(LONG_JOB)
        job.wait_for_step(3)
        cls.attach_out = p.gcprof("attach", str(job.proc.pid), "-o", cls.db, "--steps", "4",
                                  timeout=300)
        cls.rc, cls.losses, cls.job_err = job.finish()
        cls.summary = p.show(cls.db)
        # The same job launched under `record`, the same steps' window.
        cls.launched_db = p.tempdb("attach-launched")
        p.record(cls.launched_db, p.sample("py", flags=JOB), "--steps", "6:10")
        cls.launched = p.show(cls.launched_db)

    def test_job_finishes_with_the_losses_of_a_plain_run(self):
        self.assertEqual(self.rc, 0, self.job_err)
        self.assertEqual(len(self.losses), LONG_STEPS)
        self.assertEqual(self.losses, self.plain)
        self.assertNotIn("gcprof: internal error", self.job_err)

    def test_attached_run_holds_the_steps_asked_for(self):
        run = self.summary["runs"][0]
        self.assertEqual(len(self.summary["runs"]), 1)
        self.assertEqual(run["status"], "complete", self.attach_out.stderr)
        self.assertEqual(run["steps"], 4, self.attach_out.stderr)
        self.assertEqual(run["runtime"], "python")
        self.assertIn("detached, the job continues", self.attach_out.stderr)
        self.assertNotIn("steps asked for were recorded", self.attach_out.stderr)
        rows = p.query(self.db, "SELECT command, cwd FROM runs")
        self.assertIn("train_gpt.py", rows[0][0], "verify re-runs the recorded command line")

    def test_units_and_saved_bytes_equal_a_launched_recording(self):
        got = {u["name"]: u for u in self.summary["runs"][0]["units"]}
        want = {u["name"]: u for u in self.launched["runs"][0]["units"]}
        self.assertEqual(sorted(got), sorted(want))
        for name, unit in want.items():
            self.assertLessEqual(abs(got[name]["saved_bytes"] - unit["saved_bytes"]),
                                 0.01 * unit["saved_bytes"] + 1024, name)

    def test_peak_is_a_launched_recordings(self):
        # The heap from before attach (torch's own, the python heap, the
        # parameters and AdamW's moments) is the baseline: the same memory a
        # recording launched with the job holds (0.3% apart when written).
        got = self.summary["runs"][0]["peak_bytes"]
        want = self.launched["runs"][0]["peak_bytes"]
        said = [l for l in self.attach_out.stderr.splitlines() if "heap_baseline" in l]
        self.assertLessEqual(abs(got - want), 0.01 * want, (got, want, said))
        self.assertRegex(self.attach_out.stderr, r"heap_baseline_bytes=[1-9]")

    def test_memory_from_before_attach_is_in_the_trace(self):
        # Parameters, their gradients and AdamW's two moments existed before
        # attach; the baseline records them (gradients only when attach came
        # between a backward and the next zero_grad): at least 12 bytes a parameter.
        sys.path.insert(0, os.path.dirname(p.TRAIN_PY))
        import train_gpt
        model = train_gpt.build_model(train_gpt.parse_args(JOB))
        params = sum(t.numel() for t in model.parameters())
        first_step = p.query(self.db, "SELECT min(start_ns) FROM steps")[0][0]
        before = p.query(self.db, "SELECT sum(bytes) FROM allocations WHERE alloc_ns < ?",
                         first_step)[0][0]
        self.assertGreaterEqual(before, 12 * params * 0.99, (before, params))
        # No upper bound per parameter: attach may land between a forward and
        # its backward, or with the last step's logits still held by the
        # loop's variables, and those tensors are the job's memory too.
        self.assertGreater(self.summary["runs"][0]["peak_bytes"], before)

    def test_trace_advises(self):
        p.gcprof("advise", self.db, "--strategy", "every", "--json")


class VerifyAttached(unittest.TestCase):
    """`verify` on an attached trace: the job re-run from its start, paired
    with the attached steps by the job's step numbers, its peak taken on
    those steps. The `none` plan and a real one PASS with the losses matched."""

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("attach-verify")
        job = Job(VERIFY_JOB)
        job.wait_for_step(1)
        p.gcprof("attach", str(job.proc.pid), "-o", cls.db, "--steps", "2", timeout=300)
        rc, _, err = job.finish()
        assert rc == 0, err
        cls.first = p.query(cls.db, "SELECT min(step) FROM steps")[0][0]
        cls.steps = p.query(cls.db, "SELECT step FROM steps ORDER BY step")  # before verify's runs
        cls.recorded = p.query(cls.db, "SELECT count(*) FROM scalars WHERE name = 'loss'")[0][0]
        cls.out = {}
        # Budgets that leave the default headroom (3%) above what each plan
        # peaks at: the none plan's is the recorded peak, and on this small
        # job the heap from before attach (65 MiB of 77) is most of the peak,
        # so every's (76.1 MiB, 98.6%) is within 3% of it too.
        for strategy, budget in (("none", "105%"), ("every", "105%")):
            plan = os.path.join(os.path.dirname(cls.db), strategy + ".json")
            p.gcprof("advise", cls.db, "--strategy", strategy, "--budget", budget, "-o", plan)
            verify = p.gcprof("verify", cls.db, "--plan", plan, check=False)
            report = json.loads(p.gcprof("report", cls.db, "--format", "json", check=False).stdout)
            cls.out[strategy] = verify, report

    def test_steps_are_numbered_as_the_job_numbers_them(self):
        # The job's optimizer (AdamW) had stepped at least twice.
        self.assertGreaterEqual(self.first, 2)
        marks = p.query(self.db, "SELECT step, value FROM scalars WHERE name = 'attach_step'")
        self.assertEqual(marks, [(self.first, float(self.first))])
        # The two steps asked for, one after the other (an attach that lands
        # in a forward records from the next whole one).
        self.assertEqual(self.steps, [(self.first,), (self.first + 1,)])

    def check(self, strategy):
        verify, report = self.out[strategy]
        said = verify.stdout + verify.stderr
        self.assertEqual(verify.returncode, 0, said)
        self.assertEqual(report["verdict"], "PASS", said)
        gates = {g["name"]: g for g in report["gates"]}
        self.assertIn(f"{self.recorded} steps compared, 0 differ", gates["losses match"]["detail"])
        self.assertNotIn("baseline steps missing", gates["losses match"]["detail"])
        self.assertIn("recorded by `gcprof attach` from the job's step %d" % self.first, report["attached"])
        self.assertIn("attached: ", verify.stdout)
        # Compared on the attached steps: the re-run's peak from its start may
        # lie in steps the attached run never saw.
        self.assertIn("the re-run on the attached steps", gates["peak prediction"]["detail"])

    def test_none_plan_passes(self):
        self.check("none")

    def test_checkpointing_plan_passes(self):
        self.check("every")
        self.assertTrue(self.out["every"][1]["checkpoint"])


class AttachTorchvision(unittest.TestCase):
    """A public model attached: torchvision's resnet18 (BatchNorm, in-place
    ReLU; SGD with momentum, which keeps no step count)."""

    @classmethod
    def setUpClass(cls):
        try:
            import torchvision  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("torchvision is not installed")
        plain = subprocess.run(RESNET_JOB, capture_output=True, text=True, check=True)
        cls.plain = p.losses(plain.stdout)
        cls.db = p.tempdb("attach-resnet")
        job = Job(argv=RESNET_JOB)
        job.wait_for_step(3)
        cls.attach_out = p.gcprof("attach", str(job.proc.pid), "-o", cls.db, "--steps", "3",
                                  timeout=300)
        cls.rc, cls.losses, cls.job_err = job.finish()
        cls.attached = p.show(cls.db)["runs"][0]
        # The same job launched under `record`, 3 steps of it.
        cls.launched_db = p.tempdb("attach-resnet-launched")
        p.record(cls.launched_db, RESNET_JOB, "--steps", "4:7")
        cls.launched = p.show(cls.launched_db)["runs"][0]

    def test_job_finishes_with_the_losses_of_a_plain_run(self):
        self.assertEqual(self.rc, 0, self.job_err)
        self.assertEqual(self.losses, self.plain)
        self.assertNotIn("gcprof: internal error", self.job_err)

    def test_run_holds_the_steps_asked_for_under_the_models_names(self):
        self.assertEqual(self.attached["status"], "complete", self.attach_out.stderr)
        # SGD keeps no count: steps from attach, and the run says so.
        self.assertEqual(p.query(self.db, "SELECT step FROM steps ORDER BY step"),
                         [(0,), (1,), (2,)])
        self.assertEqual(p.query(self.db, "SELECT value FROM scalars WHERE name = "
                                 "'attach_step_unknown'"), [(1.0,)])
        # The model's own names (conv1, layer1.0, ...), never class names
        # (ResNet, BasicBlock.conv1) that a forward cut in half would give.
        children = {"", "conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4",
                    "avgpool", "fc"}
        units = [u["name"] for u in self.attached["units"]]
        self.assertTrue(units)
        self.assertEqual([u for u in units if u.split(".")[0] not in children], [], units)

    def test_units_saved_bytes_and_peak_are_a_launched_recordings(self):
        got = {u["name"]: u["saved_bytes"] for u in self.attached["units"]}
        want = {u["name"]: u["saved_bytes"] for u in self.launched["units"]}
        self.assertEqual(sorted(got), sorted(want))
        for name, saved in want.items():
            self.assertLessEqual(abs(got[name] - saved), 0.01 * saved + 1024, name)
        # The heap from before attach is the baseline: +0.13-0.19% in 12 of
        # 12 runs. Gradients that zero_grad freed while the baseline was
        # read, kept live to the end (heap_walk.h's stillHeld), put 1 run in
        # 5-8 at +1.2-1.7% before.
        self.assertLessEqual(abs(self.attached["peak_bytes"] - self.launched["peak_bytes"]),
                             0.01 * self.launched["peak_bytes"],
                             (self.attached["peak_bytes"], self.launched["peak_bytes"]))


class AttachCpp(unittest.TestCase):
    """The C++ sample (C API ranges and steps) attached the same way, asking for
    the CUDA backend in a job that runs on the CPU: its saved bytes are a
    launched recording's, its peak is absolute."""

    def test_cpp_sample_attached_and_advised(self):
        # ~10 ms a step on one intra-op thread: long enough to outlast the
        # attach (gdb, two heap walks) at any load.
        flags = [a if a != "3" else "400" for a in p.SMALL]
        plain = subprocess.run(p.sample("cpp", flags=flags), capture_output=True, text=True,
                               check=True)
        db = p.tempdb("attach-cpp")
        job = subprocess.Popen(p.sample("cpp", flags=flags), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        lines = []
        for line in job.stdout:
            lines.append(line)
            if line.startswith("step 3 "):
                break
        # --backend cuda on a job that never loaded CUDA: said, and host memory still recorded.
        out = p.gcprof("attach", str(job.pid), "-o", db, "--steps", "3", "--backend", "cuda",
                       timeout=300)
        self.assertIn("cuda=off", out.stderr)
        self.assertRegex(out.stderr, "gcprof: CUDA backend off: (the job has not loaded the CUDA "
                                     "driver|this gcprof was built without the CUDA backend)")
        rest, err = job.communicate(timeout=600)
        self.assertEqual(job.returncode, 0, err)
        self.assertEqual(p.losses("".join(lines) + rest), p.losses(plain.stdout))
        run = p.show(db)["runs"][0]
        self.assertEqual((run["status"], run["steps"]), ("complete", 3))
        names = {u["name"] for u in run["units"]}
        self.assertTrue({f"layers.{i}" for i in range(4)} <= names, names)
        p.gcprof("advise", db, "--strategy", "every", "--json")
        # The heap from before attach (the parameters, AdamW's moments,
        # LibTorch's own) is the baseline: the peak is absolute, a launched
        # recording's plus the heap LibTorch built before `record`'s injector
        # started (~32 MB when written), not only what the attached steps
        # allocated.
        self.assertRegex(out.stderr, r"heap_baseline_bytes=[1-9]")
        # The job's steps are held until the baseline is in: a LibTorch job
        # reports steps at once, and 3 steps of ~25 ms ended while the heap
        # was still walked, the baseline then outside the steps recorded.
        baseline_in = p.query(db, "SELECT max(alloc_ns) FROM allocations WHERE api = 8")[0][0]
        first_step = p.query(db, "SELECT min(start_ns) FROM steps")[0][0]
        self.assertIsNotNone(baseline_in, "no block from before attach in the run")
        self.assertLess(baseline_in, first_step)
        launched_db = p.tempdb("attach-cpp-launched")
        p.gcprof("record", "-o", launched_db, "--",
                 *p.sample("cpp", flags=[a if a != "3" else "6" for a in p.SMALL]), timeout=600)
        launched = p.show(launched_db)["runs"][0]
        self.assertGreaterEqual(run["peak_bytes"], 0.99 * launched["peak_bytes"])
        self.assertLessEqual(run["peak_bytes"], launched["peak_bytes"] + (64 << 20))
        got = {u["name"]: u["saved_bytes"] for u in run["units"]}
        want = {u["name"]: u["saved_bytes"] for u in launched["units"]}
        self.assertEqual(sorted(got), sorted(want))
        for name, saved in want.items():
            self.assertLessEqual(abs(got[name] - saved), 0.01 * saved + 1024, name)


class DetachPaths(unittest.TestCase):
    """Every way a session ends leaves the job training, with the plain losses.
    The long job: it must outlast the attach (gdb, the heap walks) by far."""

    @classmethod
    def setUpClass(cls):
        cls.plain = plain_losses(LONG_JOB)

    def attached_job(self, tag):
        db = p.tempdb(tag)
        job = Job(LONG_JOB)
        job.wait_for_step(2)
        g = attach(job.proc.pid, db)
        try:
            wait_attached(g)
        except AssertionError as e:
            g.kill()
            rc = job.proc.poll()
            where = threads_of(job.proc.pid) if rc is None else f"(it ended with {rc})"
            job.kill()
            raise AssertionError("%s\nthe job's stderr:\n%s\nthe job's threads:\n%s"
                                 % (e, job.stderr(), where)) from None
        # A few whole steps after attach, counted from the moment gcprof
        # said "attached": the first recorded step begins at the next whole
        # forward, and a step printed before attach may still be unread.
        job.wait_for_more_steps(3, job.steps_printed())
        return job, g, db

    def assert_job_unharmed(self, job):
        rc, losses, err = job.finish()
        self.assertEqual(rc, 0, err)
        self.assertEqual(losses, self.plain)

    def test_sigint_of_gcprof_detaches(self):
        job, g, db = self.attached_job("attach-sigint")
        g.send_signal(signal.SIGINT)
        _, err = g.communicate(timeout=120)
        self.assertEqual(g.returncode, 0, err)
        self.assertIn("detached, the job continues", err)
        self.assert_job_unharmed(job)
        run = p.show(db)["runs"][0]
        self.assertEqual(run["status"], "complete")
        # Three steps were printed after "attached": the first whole one was
        # recorded and closed.
        self.assertGreaterEqual(run["steps"], 1)

    def test_detach_from_another_shell(self):
        job, g, db = self.attached_job("attach-detach")
        p.gcprof("attach", "--detach", str(job.proc.pid), timeout=120)
        _, err = g.communicate(timeout=120)
        self.assertEqual(g.returncode, 0, err)
        self.assert_job_unharmed(job)
        self.assertEqual(p.show(db)["runs"][0]["status"], "complete")

    def test_job_ending_while_attached_is_said(self):
        # More steps asked for than the job has left: the run is the job's
        # (complete), and gcprof says the job ended and how many it got.
        db = p.tempdb("attach-ended")
        # 100 steps left (2-10 s): the attach (gdb, the heap walks, the
        # hooks) completes before the job ends, and the job ends before the
        # steps asked for.
        job = Job(LONG_JOB)
        job.wait_for_step(LONG_STEPS - 100)
        out = p.gcprof("attach", str(job.proc.pid), "-o", db, "--steps", "1000", timeout=300)
        self.assert_job_unharmed(job)
        self.assertIn("the job ended while attached", out.stderr)
        self.assertNotIn("the job continues", out.stderr)
        steps = p.show(db)["runs"][0]["steps"]
        self.assertIn(f"only {steps} of the 1000 steps asked for were recorded", out.stderr)

    def test_sigkill_of_gcprof_leaves_the_job_running(self):
        job, g, db = self.attached_job("attach-sigkill")
        g.kill()
        g.wait()
        self.assert_job_unharmed(job)
        # The job's side noticed and finished the run by itself, and removed
        # the session's folder, which gcprof attach had no time to.
        self.assertEqual(p.show(db)["runs"][0]["status"], "interrupted")
        self.assertFalse(os.path.exists(session_dir(job.proc.pid)))

    def test_job_that_dies_unreaped_ends_the_session(self):
        # The job leaves by os._exit (no exit handler of ours runs) once the
        # attach library is in, and its parent (this test) does not reap it:
        # a zombie answers kill(pid, 0), yet gcprof must see it gone.
        db = p.tempdb("attach-zombie")
        job = subprocess.Popen([sys.executable, "-c", DIES_ONCE_ATTACHED], stdout=subprocess.PIPE,
                               text=True)
        try:
            self.assertEqual(job.stdout.readline(), "ready\n")
            out = p.gcprof("attach", str(job.pid), "-o", db, check=False, timeout=60)
            # Before or after the python hooks went in: either way, said.
            self.assertRegex(out.stderr, "the job ended (while attached|before the attach completed)")
        finally:
            job.kill()
            job.wait()
        self.assertEqual(job.returncode, 3)


class Refusals(unittest.TestCase):
    """Clear words, exit 2, and nothing done to the process."""

    def refused(self, pid, *flags, env=None):
        out = p.gcprof("attach", str(pid), "-o", p.tempdb("attach-refused"), *flags,
                       check=False, env=env, timeout=120)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("cannot attach", out.stderr)
        return out.stderr

    def test_not_a_torch_process(self):
        sleeper = subprocess.Popen(["sleep", "60"])
        try:
            err = self.refused(sleeper.pid)
            self.assertIn("not a PyTorch or LibTorch job", err)
            with open(f"/proc/{sleeper.pid}/maps") as f:
                self.assertNotIn("gcprof", f.read())
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_no_such_process(self):
        self.assertIn("no process", self.refused(2 ** 22 + 12345))

    def refused_job(self, env, words):
        job = Job()
        try:
            job.wait_for_step(1)
            err = self.refused(job.proc.pid, env=env)
            for w in words:
                self.assertIn(w, err)
            with open(f"/proc/{job.proc.pid}/maps") as f:
                self.assertNotIn("libgcprof_attach", f.read())
        finally:
            job.kill()

    def test_gdb_missing(self):
        self.refused_job(dict(os.environ, GCPROF_GDB="/nonexistent/gdb"), ["gdb not found", "apt-get install gdb"])

    def test_gdb_without_python(self):
        # gdb-minimal stops at the script's python block (attach_injection.cpp).
        fake = os.path.join(tempfile.mkdtemp(prefix="gcprof-gdb-"), "gdb")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'Python scripting is not supported in this copy of GDB.'\n")
        os.chmod(fake, 0o755)
        self.refused_job(dict(os.environ, GCPROF_GDB=fake), ["has no Python", "apt-get install gdb"])

    def test_ptrace_forbidden_by_yama(self):
        scope = os.path.join(tempfile.mkdtemp(prefix="gcprof-yama-"), "ptrace_scope")
        with open(scope, "w") as f:
            f.write("3\n")
        self.refused_job(dict(os.environ, GCPROF_YAMA_PTRACE_SCOPE=scope), ["ptrace_scope = 3"])

    def test_attached_already(self):
        job = Job(LONG_JOB)
        db = p.tempdb("attach-twice")
        job.wait_for_step(1)
        g = attach(job.proc.pid, db)
        try:
            wait_attached(g)
            err = self.refused(job.proc.pid)
            self.assertIn("attached already", err)
        finally:
            g.send_signal(signal.SIGINT)
            g.communicate(timeout=120)
            job.kill()


IDLE_JOB = """
import time, torch
torch.ones(64).sum()
print("ready", flush=True)
time.sleep(120)
"""


class SafePoint(unittest.TestCase):
    """gdb loads gcprof only where the stopped thread holds no allocator lock."""

    def start(self, command):
        job = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (job.kill(), job.communicate()))
        self.assertEqual(job.stdout.readline(), "ready\n")
        return job

    def attach_fresh_jobs(self, native_job, times, duration):
        """Attaches `times` fresh runs of a native job (tests/e2e/*_job.c) once
        each: every attach succeeds, detaches, and leaves the job running."""
        import torch
        libtorch = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        for i in range(times):
            job = self.start([os.path.join(p.BUILD, "bin", native_job), libtorch, "60"])
            out = p.gcprof("attach", str(job.pid), "-o", p.tempdb("attach-" + native_job),
                           "--duration", duration, check=False, timeout=100)
            self.assertEqual(out.returncode, 0, f"attach {i}: {out.stderr}")
            self.assertIn("detached, the job continues", out.stderr)
            self.assertIsNone(job.poll(), f"attach {i}: the job still runs")

    def test_a_job_inside_malloc_is_attached_every_time(self):
        # Its main thread is inside malloc or free nearly always: before the
        # safe point, gdb's dlopen there waited on the arena lock for ever.
        self.attach_fresh_jobs("malloc_bound_job", 3, "0.5")

    def test_a_job_inside_the_dynamic_loader_is_attached_every_time(self):
        # Half its malloc and free calls are the dynamic loader's (a failed
        # dlsym at every step): gdb's dlopen at such a free freed the
        # loader's error text a second time and the job aborted.
        self.attach_fresh_jobs("step_lookup_job", 4, "0.2")

    def test_an_idle_job_is_refused_and_left_running(self):
        job = self.start([sys.executable, "-c", IDLE_JOB])
        env = dict(os.environ, GCPROF_ATTACH_SAFE_POINT_S="3")
        out = p.gcprof("attach", str(job.pid), "-o", p.tempdb("attach-idle"), check=False,
                       env=env, timeout=100)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("entered neither malloc nor free within 3 s", out.stderr)
        self.assertIsNone(job.poll(), "the job still runs")
        with open(f"/proc/{job.pid}/status") as f:
            self.assertIn("TracerPid:\t0", f.read(), "gdb has let the job go")
        with open(f"/proc/{job.pid}/maps") as f:
            self.assertNotIn("libgcprof_attach", f.read())
        self.assertFalse(os.path.exists(session_dir(job.pid)), "the session's folder is removed")


class HookOrder(unittest.TestCase):
    """free's hook goes into every loaded object before any allocation hook
    goes into one (attach/got_patch.h)."""

    def test_a_block_freed_by_a_library_patched_last_is_freed_in_the_trace(self):
        # The job allocates in its program (patched first) and frees in a
        # library loaded after LibTorch (patched ~20 ms later). A free the
        # hooks miss leaves the block live until the address is handed out
        # again: the trace then closes it at that allocation's very time.
        import torch
        libtorch = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        release = os.path.join(p.BUILD, "lib", "librelease_elsewhere.so")
        job = subprocess.Popen([os.path.join(p.BUILD, "bin", "freed_elsewhere_job"), libtorch,
                                release, "60"], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (job.kill(), job.communicate()))
        self.assertEqual(job.stdout.readline(), "ready\n")
        db = p.tempdb("attach-freed-elsewhere")
        p.gcprof("attach", str(job.pid), "-o", db, "--duration", "0.5", timeout=100)
        rows = p.query(db, "SELECT addr, alloc_ns, free_ns FROM allocations "
                           "WHERE bytes = 65536 AND api = 0")
        freed_at = {(addr, free) for addr, _, free in rows}
        missed = [r for r in rows if (r[0], r[1]) in freed_at]
        self.assertGreater(len(rows), 1000)
        self.assertEqual(len(missed), 0, f"{len(missed)} of {len(rows)} frees missed")


class AllocatorTable(unittest.TestCase):
    """malloc and free reached through function pointers in data, as MKL's
    inside libtorch_cpu are, are hooked like the GOT's (attach/got_patch.h)."""

    def test_blocks_of_an_allocator_table_are_recorded_and_freed(self):
        import torch
        libtorch = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        job = subprocess.Popen([os.path.join(p.BUILD, "bin", "allocator_table_job"), libtorch,
                                os.path.join(p.BUILD, "lib", "liballocator_table.so"), "60"],
                               stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (job.kill(), job.communicate()))
        self.assertEqual(job.stdout.readline(), "ready\n")
        db = p.tempdb("attach-allocator-table")
        g = attach(job.pid, db)
        wait_attached(g)
        job.send_signal(signal.SIGUSR1)  # the 5 MiB block from before attach is freed
        time.sleep(0.5)
        g.send_signal(signal.SIGINT)
        g.communicate(timeout=120)
        # Allocated while attached: seen (none were before).
        made = p.query(db, "SELECT COUNT(*) FROM allocations WHERE api = 0 AND bytes = 3145728")
        self.assertGreater(made[0][0], 10)
        # Held from before attach, in the baseline, then freed through the
        # table: freed in the trace too, not live to its end.
        kept = p.query(db, "SELECT free_ns FROM allocations WHERE api = 8 "
                           "AND bytes >= 5242880 AND bytes < 5242880 + 65536")
        self.assertEqual(len(kept), 1, kept)
        self.assertGreaterEqual(kept[0][0], 0)


if __name__ == "__main__":
    unittest.main()

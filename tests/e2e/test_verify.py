"""End to end: record -> advise 60% -> verify, on both samples, on CPU."""
import json
import os
import unittest
import xml.etree.ElementTree as ET

import pipeline as p


class VerifySample:
    kind = None
    extra = ()
    flags = p.ACTIVATION_HEAVY
    budget = "60%"
    gates = ()  # gates every plan of the ladder must pass, beyond the verdict

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb(f"verify-{cls.kind}")
        cls.dir = os.path.dirname(cls.db)
        cls.baseline = p.record(cls.db, p.sample(cls.kind, *cls.extra, flags=cls.flags))
        # The other default budgets first, so that the 60% plan below is the
        # latest verification, the one `report` and the tests read.
        cls.ladder = p.ladder_problems(cls.db, cls.dir, [b for b in p.BUDGET_LADDER if b != cls.budget],
                                       cls.gates)
        cls.plan = os.path.join(cls.dir, "plan.json")
        p.gcprof("advise", cls.db, "--budget", cls.budget, "-o", cls.plan)
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan, check=False)
        cls.report = json.loads(p.gcprof("report", cls.db, "--format", "json").stdout)

    def test_verdict_is_pass(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        self.assertEqual(self.report["verdict"], "PASS")

    def test_plans_at_75_and_90_percent_verify_too(self):
        self.assertEqual(self.ladder, [])

    def test_measured_peak_within_5_percent_of_predicted_and_within_budget(self):
        m, pr = self.report["measured"]["peak_bytes"], self.report["predicted"]["peak_bytes"]
        self.assertLessEqual(abs(m - pr), 0.05 * m)
        self.assertLessEqual(m, self.report["budget_bytes"])
        self.assertLess(m, self.report["baseline"]["peak_bytes"])

    def test_losses_are_identical_to_the_baseline(self):
        self.assertEqual(p.losses(self.verify.stdout), p.losses(self.baseline.stdout))
        self.assertEqual(len(p.losses(self.baseline.stdout)), 3)

    def test_report_formats(self):
        junit = os.path.join(self.dir, "report.xml")
        html = os.path.join(self.dir, "report.html")
        p.gcprof("report", self.db, "--format", "junit", "-o", junit)
        p.gcprof("report", self.db, "--format", "html", "-o", html)
        suite = ET.parse(junit).getroot()
        cases = suite.iter("testcase")
        self.assertEqual(len(list(cases)), len(self.report["gates"]))
        self.assertIn("<svg", open(html).read())
        md = p.gcprof("report", self.db, "--format", "md").stdout
        self.assertIn("PASS", md)
        for field in ("verdict", "budget_bytes", "checkpoint", "gates"):
            self.assertIn(field, self.report)

    def test_chrome_trace_export_parses(self):
        out = os.path.join(self.dir, "trace.json")
        p.gcprof("export", self.db, "--format", "chrome-trace", "-o", out)
        events = json.load(open(out))
        events = events["traceEvents"] if isinstance(events, dict) else events
        phases = {e.get("ph") for e in events}
        self.assertTrue({"X", "C"} <= phases or {"B", "C"} <= phases, phases)


class VerifyCpp(VerifySample, unittest.TestCase):
    kind = "cpp"
    extra = ("--dropout", "0.1")  # recomputation must replay the same dropout masks


class VerifyCppResNet(unittest.TestCase):
    """The LibTorch ResNet (BatchNorm in every block) with every block
    checkpointed: the re-run's losses, gradients and running statistics are
    the baseline's (the `grad_norm` and `buffer_norm` scalars resnet_train
    records, and its last line). Before gcprof::torch::checkpoint put the
    running state back, `buffers match` failed (num_batches_tracked 6 of 3).
    The peak is predicted within the tolerance: before the advisor counted
    what the reentrant C++ checkpoint holds (advisor/chain/reentrant_holds.h:
    the block's output, its gradient and the replayed output) it predicted
    23% low and the verdict was FAIL (bench/history/robustness-sweep.md, resnet_train row)."""

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("verify-resnet")
        cls.baseline = p.record(cls.db, p.sample("resnet", flags=p.RESNET_SMALL))
        plan = os.path.join(os.path.dirname(cls.db), "plan.json")
        p.gcprof("advise", cls.db, "--strategy", "every", "-o", plan)
        cls.verify = p.gcprof("verify", cls.db, "--plan", plan, check=False)
        cls.report = json.loads(p.gcprof("report", cls.db, "--format", "json", check=False).stdout)

    def test_every_block_was_checkpointed(self):
        self.assertEqual(self.report["checkpoint"], [["layers.%d" % i] for i in range(4)])

    def test_the_peak_prediction_holds(self):
        gates = {g["name"]: g for g in self.report["gates"]}
        self.assertTrue(gates["peak prediction"]["passed"], gates["peak prediction"]["detail"])
        self.assertEqual(self.report["verdict"], "PASS", self.verify.stdout)
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout)

    def test_losses_gradients_and_running_statistics_match_the_baseline(self):
        gates = {g["name"]: g for g in self.report["gates"]}
        for name in ("job completed", "losses match", "gradients match", "buffers match"):
            self.assertIn(name, gates)
            self.assertTrue(gates[name]["passed"], "%s: %s" % (name, gates[name]["detail"]))
        self.assertIn("3 steps compared, 0 differ", gates["buffers match"]["detail"])
        self.assertEqual(p.losses(self.verify.stdout), p.losses(self.baseline.stdout))
        last = [l for l in self.baseline.stdout.splitlines() if l.startswith("buffers ")]
        self.assertEqual(len(last), 1, self.baseline.stdout)
        self.assertTrue(last[0].endswith(" num_batches_tracked 3"), last[0])
        self.assertIn(last[0] + "\n", self.verify.stdout)


class VerifyPython(VerifySample, unittest.TestCase):
    kind = "py"
    extra = ("--dropout", "0.1")
    # The python process's own heap (~70-100 MiB) is persistent memory: at
    # --seq 128 the least plan peaked inside the 3% headroom of a 60% budget.
    # At --seq 256 the attention scores (seq^2) dominate (345 MiB recorded,
    # the 60% plan 153 MiB) for little more compute at this width.
    flags = ["--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "256", "--batch", "16",
             "--vocab", "256", "--steps", "3"]
    gates = ("gradients match",)


class VerifyFailures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("verify-fail")
        cls.dir = os.path.dirname(cls.db)
        p.record(cls.db, p.sample("cpp", flags=p.ACTIVATION_HEAVY))
        cls.plan = json.loads(p.gcprof("advise", cls.db, "--budget", "60%", "--json").stdout)

    def write_plan(self, name, plan):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(plan, f)
        return path

    def test_budget_below_what_the_plan_reaches_fails_and_report_exits_1(self):
        plan = dict(self.plan)
        plan["budget_bytes"] = int(plan["predicted"]["peak_bytes"] * 0.8)
        out = p.gcprof("verify", self.db, "--plan", self.write_plan("tight.json", plan), check=False)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("FAIL", out.stdout)
        rep = p.gcprof("report", self.db, "--format", "json", check=False)
        self.assertEqual(rep.returncode, 1)
        self.assertEqual(json.loads(rep.stdout)["verdict"], "FAIL")

    def test_plan_naming_a_missing_module_is_a_clean_error(self):
        runs_before = len(p.show(self.db)["runs"])
        plan = dict(self.plan)
        plan["checkpoint"] = [["layers.99"]]
        plan.pop("segments", None)  # v2: per-segment details would have to match the names
        out = p.gcprof("verify", self.db, "--plan", self.write_plan("missing.json", plan), check=False)
        self.assertEqual(out.returncode, 2)
        self.assertIn("layers.99", out.stderr)
        self.assertIn("near", out.stderr)
        self.assertEqual(len(p.show(self.db)["runs"]), runs_before, "nothing re-run, trace intact")


if __name__ == "__main__":
    unittest.main()

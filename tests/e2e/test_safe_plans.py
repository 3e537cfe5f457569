"""End to end: plans on public model families that must run, keep
training unchanged and fit their budget (record -> advise -> verify, CPU).

Units are given with --units so the tests do not depend on auto-discovery."""
import json
import os
import sys
import unittest

import pipeline as p

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "public_model_job.py")


def needs(module):
    try:
        __import__(module)
    except ImportError:
        raise unittest.SkipTest(f"no {module}")


def gates(report):
    return {g["name"]: g for g in report["gates"]}


class ResNetInPlace(unittest.TestCase):
    """torchvision resnet18: `relu` is ReLU(inplace=True); checkpointing it crashed the job."""

    @classmethod
    def setUpClass(cls):
        needs("torchvision")
        cls.db = p.tempdb("resnet")
        cls.dir = os.path.dirname(cls.db)
        cls.baseline = p.record(cls.db, [sys.executable, JOB, "resnet18"])
        cls.plan_path = os.path.join(cls.dir, "plan.json")
        cls.advise = p.gcprof("advise", cls.db, "--strategy", "every", "--units", r"relu|layer\d\.\d",
                              "-o", cls.plan_path)
        cls.plan = json.load(open(cls.plan_path))
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan_path, check=False)
        cls.report = json.loads(p.gcprof("report", cls.db, "--format", "json", check=False).stdout)

    def test_in_place_module_is_recorded_and_never_proposed(self):
        self.assertEqual([u["name"] for u in self.plan["excluded_units"]], ["relu"])
        planned = [u for segment in self.plan["checkpoint"] for u in segment]
        self.assertNotIn("relu", planned)
        self.assertEqual(len(planned), 8, planned)  # the eight BasicBlocks
        self.assertIn("left out: relu", self.advise.stdout)

    def test_only_in_place_units_is_a_clear_error(self):
        out = p.gcprof("advise", self.db, "--strategy", "every", "--units", "relu", "--json", check=False)
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        self.assertIn("in place", out.stderr)

    def test_plan_over_batchnorm_blocks_verifies_with_identical_statistics(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        g = gates(self.report)
        for name in ("job completed", "losses match", "gradients match", "buffers match"):
            self.assertTrue(g[name]["passed"], (name, g[name]))
        self.assertEqual(p.losses(self.verify.stdout), p.losses(self.baseline.stdout))


    def test_gcprof_apply_runs_the_job_with_the_plan_and_rejects_a_bad_one(self):
        out = p.gcprof("apply", self.plan_path, "--", sys.executable, JOB, "resnet18", "--steps", "1",
                       check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("checkpointing 8 modules", out.stderr)
        self.assertEqual(p.losses(out.stdout), p.losses(self.baseline.stdout)[:1])
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write("{}")
        out = p.gcprof("apply", bad, "--", sys.executable, "-c", "print('ran')", check=False)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertNotIn("ran", out.stdout)


class HfGpt2UseCache(unittest.TestCase):
    """HF GPT-2 with its default use_cache=True: a plan verifies within its budget."""

    @classmethod
    def setUpClass(cls):
        needs("transformers")
        cls.db = p.tempdb("gpt2")
        cls.dir = os.path.dirname(cls.db)
        cls.baseline = p.record(cls.db, [sys.executable, JOB, "gpt2"])

    def check_budget(self, budget):
        plan = os.path.join(self.dir, f"plan-{budget.rstrip('%')}.json")
        p.gcprof("advise", self.db, "--budget", budget, "--units", r"transformer\.h\.\d+", "-o", plan)
        out = p.gcprof("verify", self.db, "--plan", plan, check=False)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("gradients match", out.stdout)
        self.assertIn("headroom", out.stdout)
        self.assertEqual(p.losses(out.stdout), p.losses(self.baseline.stdout))

    def test_60_percent(self):
        self.check_budget("60%")

    def test_90_percent(self):
        self.check_budget("90%")


if __name__ == "__main__":
    unittest.main()

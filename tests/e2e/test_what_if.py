"""End to end: the python GPT sample recorded at batch 2 and 4, a
what-if for a budget, and a verification at the predicted largest batch."""
import json
import os
import re
import sys
import unittest

import pipeline as p

# ACTIVATION_HEAVY without its batch: the what-if sets it.
FLAGS = [f for i, f in enumerate(p.ACTIVATION_HEAVY)
         if f != "--batch" and (i == 0 or p.ACTIVATION_HEAVY[i - 1] != "--batch")]


def far_limit(extrapolation):
    """The most recorded spans past the largest size without a note (what_if.h)."""
    return extrapolation["max_spans"] if extrapolation else 4


def job(batch):
    return p.sample("py", flags=FLAGS + ["--batch", str(batch)])


class WhatIfPython(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("what-if")
        cls.dir = os.path.dirname(cls.db)
        for b in (2, 4):
            p.record(cls.db, job(b), "--name", f"batch={b}")
        cls.budget = "110%"
        # The largest batch is at the budget's edge by construction, and the
        # python heap moves by a MiB from run to run: the size is the largest
        # predicted for 2% less than the budget the plan is made for, so that
        # the verification does not hinge on that noise.
        cls.answer = json.loads(p.gcprof("advise", cls.db, "--what-if", "batch", "--budget", "108%",
                                         "--json").stdout)
        cls.largest = {l["strategy"]: l["size"] for l in cls.answer["largest"]}
        cls.size = cls.largest["optimal"]
        cls.plan = os.path.join(cls.dir, "plan.json")
        cls.advise = p.gcprof("advise", cls.db, "--what-if", "batch", "--budget", cls.budget,
                              "--size", str(cls.size), "-o", cls.plan)
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan, "--size-arg=--batch {size}",
                              check=False)

    def test_every_strategy_has_a_largest_batch_and_checkpointing_fits_more(self):
        self.assertEqual(set(self.largest), {"none", "every", "uniform", "optimal"})
        self.assertGreaterEqual(self.largest["none"], 4)
        self.assertGreater(self.largest["optimal"], self.largest["none"])
        self.assertGreaterEqual(self.largest["optimal"], self.largest["every"])
        self.assertEqual(self.answer["fit"], "affine")
        self.assertEqual(sorted(r["size"] for r in self.answer["runs"]), [2, 4])

    def test_says_what_checks_the_fit_and_when_the_answer_is_too_far(self):
        check = self.answer["fit_check"]
        self.assertFalse(check["independent"])  # two sizes: the line goes through both
        self.assertIn("Fit check: none", self.advise.stdout)
        farthest = max(l["size"] for l in self.answer["largest"] if not l["capped"])
        far = self.answer.get("extrapolation")
        if (farthest - 4) / 2 > far_limit(far):
            self.assertIsNotNone(far, self.answer)
            self.assertEqual(far["size"], farthest)
            self.assertGreater(far["suggest_size"], 4)
        else:
            self.assertIsNone(far, self.answer)

    def test_runs_can_be_given_with_their_sizes_instead_of_names(self):
        runs = {r["size"]: r["run"] for r in self.answer["runs"]}
        explicit = json.loads(p.gcprof("advise", self.db, "--what-if", "batch", "--budget", "108%",
                                       "--size-of", f"{runs[2]}=2", "--size-of", f"{runs[4]}=4",
                                       "--json").stdout)
        self.assertEqual(explicit["largest"], self.answer["largest"])

    def test_terminal_table_shows_sizes_and_budget(self):
        out = self.advise.stdout
        self.assertIn("largest batch that fits", out)
        self.assertIn(f"at batch={self.size}", out)
        self.assertIn("plan written to", out)

    def test_plan_is_marked_with_its_size(self):
        with open(self.plan) as f:
            plan = json.load(f)
        self.assertEqual(plan["format"], "gcprof.plan/2")
        self.assertEqual(plan["size"], {"name": "batch", "value": self.size, "recorded_size": 4})
        self.assertLessEqual(plan["predicted"]["peak_bytes"], plan["budget_bytes"])

    def test_verification_at_the_predicted_size_passes(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        report = json.loads(p.gcprof("report", self.db, "--format", "json").stdout)
        self.assertEqual(report["verdict"], "PASS")
        gates = {g["name"]: g["passed"] for g in report["gates"]}
        self.assertTrue(gates["losses finite"])
        self.assertTrue(gates["peak prediction"])
        runs = p.show(self.db)["runs"]
        self.assertTrue(any(r["name"].endswith(f"at batch={self.size}") for r in runs), runs)
        md = p.gcprof("report", self.db, "--format", "md").stdout
        self.assertIn("What fits", md)
        # Step times of two sizes are no slowdown: only the predicted one, at
        # the plan's size, against its predicted no-checkpoint step.
        self.assertIn("no measured slowdown", self.verify.stdout)
        self.assertIn(f"at batch={self.size} (baseline batch=4)", self.verify.stdout)
        self.assertIn("not compared with the baseline, which ran another size", md)
        self.assertIn("Step time:", md)
        self.assertIn(f"{self.size} |", md.replace(" (recorded)", ""))

    def test_report_chart_shows_the_prediction_at_the_plans_size(self):
        # Replaying the plan on the batch-4 baseline would chart batch 4's
        # memory against a re-run at the plan's batch: the chart shows the
        # what-if's peak at that batch instead, level, and says so.
        at = f"batch={self.size}"
        report = json.loads(p.gcprof("report", self.db, "--format", "json").stdout)
        self.assertEqual(report["chart"]["predicted"], f"predicted peak at {at} (what-if)")
        self.assertEqual(report["chart"]["baseline"], "baseline (recorded at batch=4)")
        self.assertIn(f"the what-if's peak at {at}", report["chart"]["note"])
        html = os.path.join(self.dir, "sized.html")
        p.gcprof("report", self.db, "--format", "html", "-o", html)
        with open(html) as f:
            page = f.read()
        self.assertIn(f"<title>predicted peak at {at} (what-if)</title>", page)
        self.assertNotIn("predicted (plan replayed)", page)
        # The level line: from the floor up to the plan's predicted peak, then
        # flat (a replayed curve would rise and fall with the steps).
        path = re.search(r'<path class="series" d="([^"]*)" fill="none" stroke="#2b6cd4"', page)
        self.assertIsNotNone(path, page[:2000])
        ys = {round(float(y), 1) for _, y in re.findall(r"[ML]([-\d.]+),([-\d.]+)", path.group(1))}
        self.assertEqual(len(ys), 2, path.group(1))
        md = p.gcprof("report", self.db, "--format", "md").stdout
        self.assertIn(f"The plan is for {at} and the baseline was recorded at batch=4", md)

    def test_without_a_budget_or_a_second_size_it_says_what_is_missing(self):
        r = p.gcprof("advise", self.db, "--what-if", "batch", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--budget", r.stderr)
        r = p.gcprof("advise", self.db, "--what-if", "seq", "--budget", "1GiB", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("two or more runs named seq=N", r.stderr)

    def test_verify_needs_to_know_how_the_size_is_passed(self):
        r = p.gcprof("verify", self.db, "--plan", self.plan, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--size-arg", r.stderr)


IMAGE_JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "image_job.py")


class WhatIfImageSide(unittest.TestCase):
    """The size is an image's side: a small conv net recorded at 32 and 64
    px, the what-if over the pixels (--side) in steps of 16, verified at the
    optimal plan's largest side."""

    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("what-if-side")
        for side in (32, 64):
            p.record(cls.db, [sys.executable, IMAGE_JOB, "--image", str(side), "--batch", "8"],
                     "--name", f"image={side}")
        ask = ["advise", cls.db, "--what-if", "image", "--budget", "200%"]
        cls.answer = json.loads(p.gcprof(*ask, "--side", "--size-step", "16", "--json").stdout)
        cls.line = json.loads(p.gcprof(*ask, "--json").stdout)
        cls.largest = {l["strategy"]: l["size"] for l in cls.answer["largest"]}
        cls.plan = os.path.join(os.path.dirname(cls.db), "plan.json")
        p.gcprof(*ask, "--side", "--size-step", "16", "--size", str(cls.largest["optimal"]), "-o", cls.plan)
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan, "--size-arg=--image {size}", check=False)

    def test_answers_are_sides_the_job_takes(self):
        self.assertEqual((self.answer["measure"], self.answer["size_step"]), ("side", 16))
        for strategy, side in self.largest.items():
            self.assertGreater(side, 64, strategy)
            self.assertEqual(side % 16, 0, strategy)
        self.assertTrue(all(r["size"] % 16 == 0 for r in self.answer["table"]), self.answer["table"])

    def test_a_line_in_the_side_would_answer_far_larger(self):
        # Activations grow with side^2: a line through 32 and 64 px in the
        # side itself cuts below and answers sides that do not fit.
        line = {l["strategy"]: l["size"] for l in self.line["largest"]}
        self.assertGreater(line["none"], self.largest["none"] + 16)

    def test_verification_at_the_predicted_side_passes(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        report = json.loads(p.gcprof("report", self.db, "--format", "json").stdout)
        self.assertEqual(report["verdict"], "PASS")
        gates = {g["name"]: g["passed"] for g in report["gates"]}
        self.assertTrue(gates["peak prediction"])


if __name__ == "__main__":
    unittest.main()

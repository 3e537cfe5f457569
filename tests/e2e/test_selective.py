"""End to end: record --ops -> advise a selective plan -> verify PASS.

The python sample with dropout (so that identical losses also prove the
recomputation draws the same masks), recorded once with operator ranges.
The budget lies between the peak `every` reaches and the recorded peak,
where keeping a few operator outputs beats recomputing whole blocks. The
units are the blocks (`--units`): over the module tree (the default) the
blocks' sub-modules compete with the save-lists, and at this budget whole
sub-modules may win, which would leave nothing selective to check here.
"""
import importlib.util
import json
import os
import sys
import unittest

import pipeline as p

UNITS = ["--units", r"layers\.[0-9]+"]
FLAGS = ["--layers", "4", "--hidden", "64", "--heads", "4", "--seq", "128", "--batch", "4",
         "--vocab", "256", "--steps", "3", "--dropout", "0.1"]


class Selective(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.db = p.tempdb("selective")
        cls.dir = os.path.dirname(cls.db)
        cls.baseline = p.record(cls.db, p.sample("py", flags=FLAGS), "--ops")
        every = json.loads(p.gcprof("advise", cls.db, "--strategy", "every", "--json",
                                    "--no-store").stdout)
        base, low = every["baseline"]["peak_bytes"], every["predicted"]["peak_bytes"]
        # A third of the way up: below the peak of any two whole blocks
        # (each holds ~5 MiB here), so recomputing whole blocks needs three of
        # the four and a save-list on one of them recomputes less. Higher up,
        # two whole blocks fit and noisy forward times decide between them and
        # the save-lists.
        cls.budget = low + int(0.33 * (base - low))
        cls.plan_path = os.path.join(cls.dir, "plan.json")
        cls.advise = p.gcprof("advise", cls.db, "--budget", "%dB" % cls.budget, *UNITS, "-o", cls.plan_path)
        cls.plan = json.load(open(cls.plan_path))
        cls.every = every
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan_path, check=False)

    def test_operator_ranges_are_recorded_inside_module_forwards(self):
        rows = p.query(self.db, "SELECT r.name, m.name FROM ranges r JOIN ranges m ON r.parent = m.id "
                                "WHERE r.run = 1 AND m.run = 1 AND r.name LIKE 'op aten.%'")
        self.assertTrue(rows)
        self.assertTrue(any(parent.startswith("layers.") for _, parent in rows))
        self.assertNotIn("op aten.detach.default", {name for name, _ in rows})
        scalars = p.query(self.db, "SELECT value FROM scalars WHERE name = 'op_hook_ns_per_call'")
        self.assertTrue(scalars and all(v > 0 for (v,) in scalars))

    def test_selective_checkpointings_dispatch_is_measured_once_and_priced(self):
        # Once, after the first step: a save-list's recompute includes it.
        for name in ("selective_ns_per_op", "op_dispatch_ns_per_call"):
            rows = p.query(self.db, "SELECT step, value FROM scalars WHERE name = ?", name)
            self.assertEqual(len(rows), 1, (name, rows))
            self.assertGreater(rows[0][1], 0, name)
        self.assertIn("PyTorch's selective dispatch", self.advise.stdout)
        self.assertGreater(self.plan["recording_cost"]["selective_ns_per_op"], 0)

    def test_plan_is_v2_with_selective_segments(self):
        self.assertEqual(self.plan["format"], "gcprof.plan/2")
        segs = self.plan["segments"]
        self.assertEqual(len(segs), len(self.plan["checkpoint"]))
        selective = [s for s in segs if s["policy"] == "selective"]
        self.assertTrue(selective, self.advise.stdout)
        for s in selective:
            self.assertEqual(s["module"], s["units"][0])
            self.assertTrue(s["save"])
            self.assertTrue(all("#" in k and k.startswith("aten.") for k in s["save"]))
        self.assertIn("selective (", self.advise.stdout)
        self.assertIn("save: aten.", self.advise.stdout)

    def test_selective_plan_recomputes_less_than_every_within_the_budget(self):
        self.assertLessEqual(self.plan["predicted"]["peak_bytes"], self.budget)
        self.assertLess(self.plan["predicted"]["recompute_ns"], self.every["predicted"]["recompute_ns"])

    def test_verify_passes_with_identical_losses(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        self.assertIn("verdict: PASS", self.verify.stdout)
        self.assertEqual(p.losses(self.verify.stdout), p.losses(self.baseline.stdout))
        self.assertEqual(len(p.losses(self.baseline.stdout)), 3)

    def test_dropout_masks_are_kept_with_every_later_draw_of_their_block(self):
        # Each block draws two masks (attention probabilities, then output).
        # A kept mask is not drawn again in the replay, so a later draw would
        # differ unless kept too; the losses test above checks the result.
        masks = [[k for k in s["save"] if k.startswith("aten.bernoulli_")]
                 for s in self.plan["segments"] if s["policy"] == "selective"]
        self.assertTrue(any(masks), self.advise.stdout)
        for kept in masks:
            if "aten.bernoulli_.float#0" in kept:
                self.assertIn("aten.bernoulli_.float#1", kept)

    def test_reports_show_the_save_lists(self):
        md = p.gcprof("report", self.db, "--format", "md").stdout
        self.assertIn("**Selective**", md)
        html = os.path.join(self.dir, "report.html")
        p.gcprof("report", self.db, "--format", "html", "-o", html)
        self.assertIn("selective, keeps", open(html).read())

    def test_torchtitan_rule_shows_what_it_holds_to_the_replay(self):
        # torchtitan's list saves outputs autograd does not keep (a projection's
        # addmm consumed by the next operator): advise says what they hold from
        # the forward to the replay, and the plan carries it as held_bytes.
        plan_path = os.path.join(self.dir, "matmuls.json")
        out = p.gcprof("advise", self.db, "--strategy", "matmuls", *UNITS, "-o", plan_path, "--no-store").stdout
        segs = json.load(open(plan_path))["segments"]
        held = [s for s in segs if s.get("held_bytes", 0) > 0]
        self.assertTrue(held, out)
        self.assertTrue(all(s["policy"] == "selective" and s["save_rule"] == "matmuls" for s in held))
        self.assertEqual(out.count(" to the replay"), len(held), out)
        self.assertRegex(out, r"selective \(matmuls, keeps [0-9.]+ [KMG]?i?B \+ holds [0-9.]+ [KMG]?i?B to the replay")

    def test_whole_only_gives_whole_segments(self):
        plan = json.loads(p.gcprof("advise", self.db, "--budget", "%dB" % self.budget, "--whole-only",
                                   *UNITS, "--json", "--no-store").stdout)
        self.assertTrue(all(s["policy"] == "whole" for s in plan["segments"]))


PEER_JOB = os.path.join(p.ROOT, "bench", "plan", "peer_job.py")


class TorchtitanRule:
    """`--strategy matmuls` is torchtitan's per-block rule: with the default
    units, one selective checkpoint per block (never its sub-modules, whose
    inputs the block's checkpoint does not keep), as peak-for-peak as the
    rule applied by hand (bench/plan/peer_rules.py) on the same job."""
    model = None
    blocks = []
    needs = ()

    @classmethod
    def setUpClass(cls):
        lacking = [m for m in cls.needs if importlib.util.find_spec(m) is None]
        if lacking:
            raise unittest.SkipTest(f"{', '.join(lacking)} not installed (scripts/install-deps)")
        # Big enough that activations set the peak: on smaller jobs the
        # sub-modules' plan (what `matmuls` planned before) peaked within 1%
        # of the rule's, here 1.4% above it (GPT) and 3.2% below (GPT-2).
        job = [sys.executable, PEER_JOB, "--model", cls.model, "--layers", "4", "--hidden", "128", "--heads", "4",
               "--seq", "256", "--batch", "8", "--vocab", "256", "--steps", "3"]
        cls.db = p.tempdb(f"titan-{cls.model}")
        d = os.path.dirname(cls.db)
        cls.baseline = p.record(cls.db, job, "--ops")
        cls.plan_path = os.path.join(d, "matmuls.json")
        cls.advise = p.gcprof("advise", cls.db, "--strategy", "matmuls", "-o", cls.plan_path)
        cls.plan = json.load(open(cls.plan_path))
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan_path, check=False)
        cls.report = json.loads(p.gcprof("report", cls.db, "--format", "json").stdout)
        by_hand = os.path.join(d, "by-hand.db")
        p.record(by_hand, [*job, "--peer", "titan"])
        cls.by_hand_peak = p.show(by_hand)["runs"][-1]["peak_bytes"]

    def test_one_selective_checkpoint_per_block(self):
        segs = self.plan["segments"]
        self.assertEqual([s["module"] for s in segs], self.blocks, self.advise.stdout)
        self.assertTrue(all(s["policy"] == "selective" and s["save_rule"] == "matmuls" for s in segs))

    def test_verified_peak_is_the_rules_peak(self):
        measured = self.report["measured"]["peak_bytes"]
        self.assertLessEqual(abs(measured - self.by_hand_peak), 0.01 * self.by_hand_peak,
                             "matmuls plan %d B, torchtitan's rule by hand %d B" % (measured, self.by_hand_peak))
        # The prediction may be high, never low. A checkpointed forward frees
        # what autograd would have kept when the sub-module that made it
        # returns (advisor/chain/checkpointed_forward.h); PyTorch frees it at
        # the last Python reference, which the trace does not hold. On the
        # GPT the attention's softmax output and dropout mask (8 MiB each,
        # made in the attention's own body) die after the dropout, not at the
        # attention's end: the last block's forward is predicted 182.3 MiB,
        # measured 174.2 (torch 2.15), above the run's peak in its backward
        # (179.5 predicted, 179.4 measured).
        predicted = self.report["predicted"]["peak_bytes"]
        self.assertGreaterEqual(predicted, 0.99 * measured)
        self.assertLessEqual(predicted, 1.025 * measured)

    def test_verify_passes_with_identical_losses(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        self.assertIn("verdict: PASS", self.verify.stdout)
        self.assertEqual(p.losses(self.verify.stdout), p.losses(self.baseline.stdout))
        self.assertEqual(len(p.losses(self.baseline.stdout)), 3)


class TorchtitanRuleGpt(TorchtitanRule, unittest.TestCase):
    model = "gpt"
    blocks = ["layers.%d" % i for i in range(4)]


class TorchtitanRuleGpt2(TorchtitanRule, unittest.TestCase):
    model = "gpt2"
    blocks = ["transformer.h.%d" % i for i in range(4)]
    needs = ("transformers",)


if __name__ == "__main__":
    unittest.main()

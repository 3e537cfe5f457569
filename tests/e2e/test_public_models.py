"""End to end: public model families, recorded small on CPU, get
their blocks as units by default, a plan at 60% (or, where the process's own
memory makes 60% unreachable on a host run, the reason in the model's terms
and the least peak the blocks reach), and a verify that PASSes;
the default plans at 75% and 90% verify too, with the gradient gate.

Models are built from configs with random weights (samples/python/train_public.py);
nothing is downloaded."""
import importlib.util
import json
import os
import sqlite3
import sys
import unittest

import pipeline as p

PUBLIC = os.path.join(p.ROOT, "samples", "python", "train_public.py")


def public(model, *flags):
    return [sys.executable, PUBLIC, "--model", model, *flags]


def load(path):
    with open(path) as f:
        return json.load(f)


def missing(*modules):
    return [m for m in modules if importlib.util.find_spec(m) is None]


class PublicModel:
    """Subclasses set model, flags, needs, expected units and rule."""
    model = None
    flags = ()
    needs = ()
    first = last = None
    count = 0
    rule = None
    ladder = ("75%", "90%")  # the other default budgets, verified after 60%

    @classmethod
    def setUpClass(cls):
        lacking = missing(*cls.needs)
        if lacking:
            raise unittest.SkipTest(f"{', '.join(lacking)} not installed (scripts/install-deps)")
        cls.db = p.tempdb(f"public-{cls.model}")
        cls.dir = os.path.dirname(cls.db)
        cls.baseline = p.record(cls.db, public(cls.model, *cls.flags))
        cls.recorded = p.show(cls.db)["runs"][0]
        cls.plan_path = os.path.join(cls.dir, "plan.json")
        cls.advice = p.gcprof("advise", cls.db, "--budget", "60%", "-o", cls.plan_path, check=False)
        cls.budget = "60%"
        if cls.advice.returncode == 1:
            # Out of reach: plan the least peak the blocks reach, with 3% of the
            # recorded peak as headroom (the python runtime's checkpoint
            # bookkeeping adds ~1% on the host heap that the trace cannot show).
            cls.infeasible = cls.advice
            least = json.loads(p.gcprof("advise", cls.db, "--strategy", "every", "--json",
                                        "--no-store").stdout)
            recorded = least["baseline"]["peak_bytes"]
            cls.budget = f"{least['predicted']['peak_bytes'] + recorded * 3 // 100}B"
            cls.advice = p.gcprof("advise", cls.db, "--strategy", "every", "--budget", cls.budget,
                                  "-o", cls.plan_path, check=False)
        cls.verify = p.gcprof("verify", cls.db, "--plan", cls.plan_path, check=False)
        cls.report = json.loads(p.gcprof("report", cls.db, "--format", "json").stdout)
        cls.ladder_problems = p.ladder_problems(cls.db, cls.dir, cls.ladder, ("gradients match",))

    def test_units_are_the_blocks_of_every_stage(self):
        auto = self.recorded["auto_units"]
        names = auto["names"]
        self.assertEqual(len(names), self.count, names)
        self.assertEqual((names[0], names[-1]), (self.first, self.last))
        self.assertEqual(auto["rule"], self.rule)
        plan = load(self.plan_path)
        # Over the module tree the blocks are the level the units were split from.
        self.assertEqual(plan.get("blocks", plan["units"]), names)
        self.assertEqual(plan["units_rule"], self.rule)

    def test_tree_plan_wraps_modules_that_never_nest_and_beats_whole_blocks(self):
        plan = load(self.plan_path)
        self.assertEqual(plan["format"], "gcprof.plan/2")
        modules = [s["module"] for s in plan["segments"]]
        self.assertEqual([[m] for m in modules], plan["checkpoint"])
        for a in modules:
            for b in modules:
                self.assertFalse(b.startswith(a + "."), (a, b))
        if self.budget != "60%":
            # 60% was out of reach and setUpClass planned the least peak of
            # `every`, which stays a plan of whole blocks over the module tree.
            self.assertEqual(plan["strategy"], "every")
            self.assertEqual(modules, plan.get("blocks", plan["units"]))
            return
        self.assertEqual(plan["strategy"], "optimal")
        self.assertEqual(plan["plan_level"], "tree")
        blocks = plan["compare"].get("blocks")
        if blocks is not None and blocks["fits_budget"]:
            self.assertLessEqual(plan["predicted"]["recompute_ns"], blocks["recompute_ns"])

    def test_advise_finds_a_plan(self):
        self.assertEqual(self.advice.returncode, 0, self.advice.stdout + self.advice.stderr)
        plan = load(self.plan_path)
        self.assertTrue(plan["feasible"])
        self.assertGreater(len(plan["checkpoint"]), 0)

    def test_verify_passes(self):
        self.assertEqual(self.verify.returncode, 0, self.verify.stdout + self.verify.stderr)
        self.assertEqual(self.report["verdict"], "PASS")
        m, pr = self.report["measured"]["peak_bytes"], self.report["predicted"]["peak_bytes"]
        self.assertLessEqual(abs(m - pr), 0.05 * m)
        self.assertLessEqual(m, self.report["budget_bytes"])

    def test_losses_are_identical_to_the_baseline(self):
        self.assertEqual(p.losses(self.verify.stdout), p.losses(self.baseline.stdout))
        self.assertEqual(len(p.losses(self.baseline.stdout)), 3)

    def test_default_plans_at_75_and_90_percent_verify(self):
        self.assertEqual(self.ladder_problems, [])


class Gpt2(PublicModel, unittest.TestCase):
    model = "gpt2"
    flags = ("--layers", "4", "--seq", "256", "--batch", "16")
    needs = ("transformers",)
    first, last, count = "transformer.h.0", "transformer.h.3", 4
    rule = "auto: transformer.h.#"

    def test_sixty_percent_is_reached(self):
        self.assertEqual(self.budget, "60%")

    def test_default_plan_takes_attention_and_mlp_and_beats_whole_blocks(self):
        # Dropping an attention or MLP's activations leaves its block's layer
        # norms and residual adds unrecomputed, so the tree plan (by default)
        # takes sub-modules and recomputes less than the best whole-block plan.
        # Which blocks it still takes whole depends on the host: 60% is of a
        # peak that holds MKL's per-thread GEMM buffers (malloc'd at the first
        # matmuls and kept: 17 MiB on AVX2, 35 MiB on AVX-512), and the tighter
        # the rest, the more a whole block's extra bytes (its norms' outputs and
        # residual sums) are worth their recompute. On AVX-512 no plan of whole
        # blocks reaches 60% at all; the tree plan does.
        plan = load(self.plan_path)
        modules = [s["module"] for s in plan["segments"]]
        self.assertTrue(plan["feasible"])
        self.assertTrue(any(m.rsplit(".", 1)[-1] in ("attn", "mlp") for m in modules), modules)
        blocks = plan["compare"].get("blocks")
        if blocks is None:
            self.assertFalse(plan["compare"]["every"]["fits_budget"])
        else:
            self.assertLess(plan["predicted"]["recompute_ns"], blocks["recompute_ns"])


class Llama(PublicModel, unittest.TestCase):
    model = "llama"
    flags = ("--layers", "4", "--seq", "256", "--batch", "16")
    needs = ("transformers",)
    first, last, count = "model.layers.0", "model.layers.3", 4
    rule = "auto: model.layers.#"

    def test_sixty_percent_is_reached(self):
        self.assertEqual(self.budget, "60%")


class VisionTransformer(PublicModel, unittest.TestCase):
    model = "vit"
    flags = ("--layers", "6", "--image", "128", "--batch", "24")
    needs = ("torchvision",)
    first, last, count = "encoder.layers.encoder_layer_0", "encoder.layers.encoder_layer_5", 6
    rule = "auto: encoder.layers.encoder_layer_#"

    def test_sixty_percent_is_reached(self):
        self.assertEqual(self.budget, "60%")


class T5(PublicModel, unittest.TestCase):
    """Encoder-decoder: the units come from both stacks. At this small size
    each block's sub-layers (layer.#) hold nearly all of its bytes, so the
    stage rule takes those; the parallel-stacks rule adds the encoder's."""
    model = "t5"
    flags = ("--layers", "2", "--seq", "64", "--batch", "4")
    needs = ("transformers",)
    first, last, count = "encoder.block.0.layer.0", "decoder.block.1.layer.2", 10
    rule = "auto: decoder.block.#.layer.# + encoder.block.#.layer.# (the blocks of the stages decoder.block.#)"
    # Here for the units of two stacks: at this size the process heap and the
    # parameters hold 73 of its 81 MiB, so 75% is out of reach as well.
    ladder = ()


class BertWholeBlocks(unittest.TestCase):
    """HF BERT gets plans over whole blocks only, where GPT-2 and Llama get
    them over the blocks' sub-modules: BertOutput is passed the attention's
    output as its residual, so its backward range ends after the
    intermediate's begins (they nest, not one after another). advise says
    so instead of leaving it unexplained."""

    @classmethod
    def setUpClass(cls):
        if missing("transformers"):
            raise unittest.SkipTest("transformers not installed (scripts/install-deps)")
        cls.db = p.tempdb("public-bert")
        p.record(cls.db, public("bert", "--layers", "2", "--seq", "64", "--batch", "4", "--steps", "3"))
        cls.advice = p.gcprof("advise", cls.db, "--budget", "80%", "--no-store", check=False)

    def test_advise_says_why_the_blocks_are_not_split(self):
        out = self.advice.stdout
        self.assertIn("plans over whole blocks only, not their sub-modules", out, out + self.advice.stderr)
        self.assertIn("do not run one after another in forward and backward", out)
        self.assertIn(".output's ends", out)


class Whisper(unittest.TestCase):
    """HF Whisper (audio encoder-decoder, 4+4 layers, random weights): the
    plan that checkpoints every block, and a budget's plan that checkpoints
    some of them, are each predicted within 1% of what their verification
    measures, and verify. 95%: at this size 85% is below the least peak any
    plan reaches (the process's own heap is most of it), and 95% leaves a plan
    of two of the four encoder blocks."""

    @classmethod
    def setUpClass(cls):
        if missing("transformers"):
            raise unittest.SkipTest("transformers not installed (scripts/install-deps)")
        cls.db = p.tempdb("public-whisper")
        cls.baseline = p.record(cls.db, public("whisper", "--layers", "4", "--seq", "512", "--batch", "2",
                                               "--steps", "3"))
        cls.verified = {}
        for name, how in (("every", ("--strategy", "every")), ("95%", ("--budget", "95%"))):
            plan = os.path.join(os.path.dirname(cls.db), "plan-%s.json" % name.rstrip("%"))
            p.gcprof("advise", cls.db, *how, "-o", plan)
            run = p.gcprof("verify", cls.db, "--plan", plan, check=False)
            cls.verified[name] = (run, json.loads(p.gcprof("report", cls.db, "--format", "json").stdout))

    def check(self, name):
        run, report = self.verified[name]
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual(report["verdict"], "PASS")
        m, pr = report["measured"]["peak_bytes"], report["predicted"]["peak_bytes"]
        self.assertLessEqual(abs(m - pr), 0.01 * m, (name, pr, m))
        self.assertEqual(p.losses(run.stdout), p.losses(self.baseline.stdout))

    def test_every_is_predicted_within_one_percent_and_verifies(self):
        self.check("every")

    def test_a_budgets_plan_is_predicted_within_one_percent_and_verifies(self):
        self.check("95%")


class Bart(unittest.TestCase):
    """HF BART: every decoder layer reads the encoder's output, whose gradient
    completes only when the last of them is done, so their recorded backward
    ranges all end together (nested, not one after another). advise refused
    every step as "not in chain order" before; the least peak the blocks
    reach must now verify with identical losses (step_layout.cpp's late
    backward end, which ResNet50 below must not pass). Tiny: two steps, 2+2
    layers."""

    @classmethod
    def setUpClass(cls):
        if missing("transformers"):
            raise unittest.SkipTest("transformers not installed (scripts/install-deps)")
        cls.db = p.tempdb("public-bart")
        cls.baseline = p.record(cls.db, public("bart", "--layers", "2", "--seq", "64", "--batch", "4",
                                               "--steps", "2"))
        cls.least = p.gcprof("advise", cls.db, "--strategy", "every", "--json", "--no-store", check=False)

    def test_units_of_both_stacks_form_a_chain(self):
        self.assertEqual(self.least.returncode, 0, self.least.stderr)
        plan = json.loads(self.least.stdout)
        self.assertEqual(plan.get("blocks", plan["units"]),
                         ["model.encoder.layers.0", "model.encoder.layers.1",
                          "model.decoder.layers.0", "model.decoder.layers.1"])

    def test_least_peak_plan_verifies(self):
        self.assertEqual(self.least.returncode, 0, self.least.stderr)
        least = json.loads(self.least.stdout)
        # 3% of the recorded peak as headroom, as PublicModel does when 60% is out of reach.
        budget = f"{least['predicted']['peak_bytes'] + least['baseline']['peak_bytes'] * 3 // 100}B"
        plan = os.path.join(os.path.dirname(self.db), "plan.json")
        p.gcprof("advise", self.db, "--strategy", "every", "--budget", budget, "-o", plan)
        verify = p.gcprof("verify", self.db, "--plan", plan, check=False)
        report = json.loads(p.gcprof("report", self.db, "--format", "json").stdout)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        self.assertEqual(report["verdict"], "PASS")
        m, pr = report["measured"]["peak_bytes"], report["predicted"]["peak_bytes"]
        self.assertLessEqual(abs(m - pr), 0.05 * m)
        self.assertEqual(p.losses(verify.stdout), p.losses(self.baseline.stdout))


class ResNet18(PublicModel, unittest.TestCase):
    """Small images keep the test fast; then parameters and the process's own
    heap dominate the host peak and 60% is out of reach: advise must say so in
    the model's terms, and the least peak the blocks reach must verify."""
    model = "resnet18"
    flags = ("--image", "128", "--batch", "8")
    needs = ("torchvision",)
    first, last, count = "layer1.0", "layer4.1", 8
    rule = "auto: layer#.#"
    ladder = ()  # at this size parameters and the heap dominate every budget

    def test_an_unreachable_budget_names_what_limits_it(self):
        if self.budget == "60%":
            self.skipTest("60% was reachable on this run")
        err = self.infeasible.stderr
        self.assertIn("cannot be met", err)
        self.assertIn("made before the first step (parameters", err)
        self.assertIn("of the", err)


class ResNet50(unittest.TestCase):
    """torchvision ResNet-50 (BatchNorm, in-place ReLU), 224 px, batch 13, two
    steps: its blocks are the units and its default plans at 60%, 75% and 90%
    verify with the gradient and buffer gates. 75% and 90% failed "peak
    prediction" by exactly the checkpointed blocks' outputs until the replay
    kept the output of a block that ends in an in-place ReLU.

    60% needs this size on a host run. Parameters and the process heap
    (~153 MiB) and the gradients made before the peak (~88 MiB) stay under
    every plan, and so do the stem's activations and the inputs each block's
    checkpoint keeps: at 192 px x 8 (the size before) checkpointing every
    block peaks at 66% of the recorded peak (458 of 692 MiB) and no plan of
    module checkpoints reaches the 403 MiB that 60% less headroom leaves
    (bench/RESULTS.md has the breakdown). The share that stays falls as the
    activations grow; from about 1.8x those activations 60% is reachable.
    Two steps (step 1 is the steady one) keep the four runs affordable."""
    flags = ("--image", "224", "--batch", "13", "--steps", "2")

    @classmethod
    def setUpClass(cls):
        lacking = missing("torchvision")
        if lacking:
            raise unittest.SkipTest("torchvision not installed (scripts/install-deps)")
        cls.db = p.tempdb("public-resnet50")
        cls.dir = os.path.dirname(cls.db)
        p.record(cls.db, public("resnet50", *cls.flags))
        cls.recorded = p.show(cls.db)["runs"][0]
        cls.ladder_problems = p.ladder_problems(cls.db, cls.dir, ("60%", "75%", "90%"),
                                                ("gradients match", "buffers match"))

    def test_units_are_the_bottleneck_blocks(self):
        names = self.recorded["auto_units"]["names"]
        self.assertEqual((len(names), names[0], names[-1]), (16, "layer1.0", "layer4.2"))

    def test_default_plans_at_60_75_and_90_percent_verify(self):
        self.assertEqual(self.ladder_problems, [])

    def test_in_place_outputs_are_marked_by_address(self):
        # Every call of an in-place ReLU names the storage it returned
        # (docs/plan.md, "The replay simulator"): the stem's relu and three
        # per block, in each of the two steps; each names an allocation live
        # when the call ended.
        with sqlite3.connect(self.db) as db:
            marks = db.execute(
                "SELECT r.name, c.name, c.end_ns FROM ranges r JOIN ranges c "
                "ON c.run = r.run AND c.id = r.parent WHERE r.run = 1 "
                "AND r.name LIKE 'inplace output 0x%'").fetchall()
            unmatched = [
                (mark, call) for mark, call, end in marks
                if db.execute("SELECT count(*) FROM allocations WHERE run = 1 AND addr = ? AND "
                              "alloc_ns <= ? AND (free_ns = -1 OR free_ns > ?)",
                              (int(mark.rsplit("0x", 1)[1], 16), end, end)).fetchone()[0] != 1]
        self.assertGreaterEqual(len(marks), 2 * (1 + 3 * 16))
        self.assertTrue(all(call == "relu" or call.endswith(".relu") for _, call, _ in marks))
        self.assertEqual(unmatched, [])


if __name__ == "__main__":
    unittest.main()


class DiffusionUNet(unittest.TestCase):
    """Stable-Diffusion-style fine-tuning of a tiny diffusers
    UNet2DConditionModel (bench/robustness/probe_job.py sd_unet: noise
    prediction on random latents, a frozen CLIP text encoder). Its down and
    up paths are sibling lists of blocks of different classes whose
    ModuleLists are never called, and every block reads the time embedding,
    so all backward windows end together: the units were the up path only
    (every budget out of reach), then not a chain. Both paths must be the
    units and `every` must verify with identical losses."""

    def test_down_and_up_paths_are_the_units_and_every_verifies(self):
        if missing("diffusers", "transformers"):
            raise unittest.SkipTest("diffusers not installed (scripts/install-deps)")
        db = p.tempdb("public-sd-unet")
        job = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "robustness",
                           "probe_job.py")
        baseline = p.record(db, [sys.executable, job, "sd_unet", "--image", "16", "--batch", "2",
                                 "--steps", "2"])
        plan = os.path.join(os.path.dirname(db), "plan.json")
        p.gcprof("advise", db, "--strategy", "every", "-o", plan)
        units = load(plan)
        self.assertEqual(units.get("blocks", units["units"]),
                         ["down_blocks.0", "down_blocks.1", "up_blocks.0", "up_blocks.1"])
        verify = p.gcprof("verify", db, "--plan", plan, check=False)
        report = json.loads(p.gcprof("report", db, "--format", "json", check=False).stdout)
        self.assertEqual(verify.returncode, 0, verify.stdout + verify.stderr)
        self.assertEqual(report["verdict"], "PASS", report["gates"])
        self.assertEqual(p.losses(verify.stdout), p.losses(baseline.stdout))

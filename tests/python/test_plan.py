"""Applying gcprof.plan/1 and /2 files (selective segments included): GCPROF_PLAN on an unmodified job, and gcprof.apply_plan."""
import atexit
import collections
import json
import os
import shutil
import sys
import tempfile

import pytest

from harness import SHIM, TINY, loss_lines, run_python

sys.path.insert(0, SHIM)
from fake_recorder import ranges  # noqa: E402

TMP = tempfile.mkdtemp(prefix="gcprof-plan-test-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)


def plan_file(checkpoint, name="plan.json", **extra):
    plan = {"format": "gcprof.plan/1", "trace_run": 1, "strategy": "optimal",
            "budget_bytes": 1 << 20, "units": ["layers.0", "layers.1", "layers.2"],
            "checkpoint": checkpoint, "predicted": {"peak_bytes": 1, "recompute_ns": 1,
                                                    "step_ns": 1}}
    plan.update(extra)
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        json.dump(plan, f)
    return path


def test_missing_names_exit_2_with_near_matches_and_no_traceback():
    path = plan_file([["layer.1"], ["layers.2"], ["blocks.zzz"]], "missing.json")
    for fake in (False, True):
        proc, _ = run_python([TINY], fake=fake, GCPROF_PLAN=path)
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert "'layer.1': did you mean 'layers.1'" in proc.stderr, proc.stderr
        assert "'blocks.zzz': no similar name" in proc.stderr, proc.stderr
        assert "2 checkpoint names not found" in proc.stderr, proc.stderr
        # The refusal is the whole story: not followed by "ran no training forward".
        assert "no training forward" not in proc.stderr, proc.stderr
        assert "loss" not in proc.stdout, "the job ran a step with a bad plan"


def test_unreadable_or_foreign_plan_exits_2():
    bad_json = os.path.join(TMP, "bad.json")
    with open(bad_json, "w") as f:
        f.write("{not json")
    cases = {bad_json: "not valid JSON", os.path.join(TMP, "absent.json"): "cannot read",
             plan_file("layers.0", "flat.json"): "list of segments"}
    for path, message in cases.items():
        proc, _ = run_python([TINY], GCPROF_PLAN=path)
        assert proc.returncode == 2 and message in proc.stderr, (path, proc.stderr)
        assert "Traceback" not in proc.stderr, proc.stderr


def test_apply_plan_from_code_rejects_bad_names_and_leaves_model_untouched():
    import gcprof
    from gcprof.runtime.checkpointing import is_checkpointed
    from tiny_model import TinyGPT
    model = TinyGPT()
    try:
        gcprof.apply_plan(model, plan_file([["layers.0"], ["layers.7"]], "code.json"))
    except gcprof.PlanError as error:
        assert "'layers.7': did you mean" in str(error), error
    else:
        raise AssertionError("no PlanError for layers.7")
    assert not any(is_checkpointed(m) for m in model.modules())
    applied = gcprof.apply_plan(model, plan_file([["layers.0", "layers.2"]], "seg.json"))
    assert applied == ["layers.0", "layers.2"]
    assert [n for n, m in model.named_modules() if is_checkpointed(m)] == ["layers.0", "layers.2"]


def test_tree_plans_wrap_each_segments_module_and_refuse_nested_ones():
    import gcprof
    from gcprof.runtime.checkpointing import is_checkpointed
    from tiny_model import TinyGPT
    # A v2 plan over the module tree: a whole block here, one sub-module there.
    units = ["layers.0.attn", "layers.0.mlp", "layers.1.attn", "layers.1.mlp"]
    tree = plan_file([["layers.0"], ["layers.1.mlp"]], "tree.json", format="gcprof.plan/2",
                     units=units, blocks=["layers.0", "layers.1"],
                     segments=[{"kind": "module", "units": units[:2], "module": "layers.0"},
                               {"kind": "module", "units": units[3:], "module": "layers.1.mlp"}])
    model = TinyGPT()
    assert gcprof.apply_plan(model, tree) == ["layers.0", "layers.1.mlp"]
    assert [n for n, m in model.named_modules() if is_checkpointed(m)] == ["layers.0", "layers.1.mlp"]
    # `module` is what gets wrapped, whatever the segment's names say.
    model = TinyGPT()
    moved = plan_file([["layers.1.attn"]], "module.json", format="gcprof.plan/2",
                      segments=[{"units": ["layers.1.attn"], "module": "layers.1"}])
    assert gcprof.apply_plan(model, moved) == ["layers.1"]
    model = TinyGPT()
    nested = plan_file([["layers.1"], ["layers.1.mlp"]], "nested.json", format="gcprof.plan/2")
    try:
        gcprof.apply_plan(model, nested)
    except gcprof.PlanError as error:
        assert "must not nest" in str(error) and "'layers.1.mlp'" in str(error), error
    else:
        raise AssertionError("no PlanError for nested modules")
    assert not any(is_checkpointed(m) for m in model.modules())


def test_tree_plan_gives_identical_losses():
    path = plan_file([["layers.0"], ["layers.1.mlp"]], "tree-losses.json", format="gcprof.plan/2",
                     segments=[{"module": "layers.0"}, {"module": "layers.1.mlp"}])
    args = [TINY, "--dropout", "0.2", "--steps", "2"]
    plain = loss_lines(run_python(args, shim=False)[0])
    proc, _ = run_python(args, GCPROF_PLAN=path)
    assert loss_lines(proc) == plain, (proc.stderr, plain)


def test_plan_names_recorded_through_a_wrapper_apply_to_the_bare_model():
    import gcprof
    from gcprof.runtime.checkpointing import is_checkpointed
    from tiny_model import TinyGPT
    model = TinyGPT()
    gcprof.apply_plan(model, plan_file([["module.layers.1"], ["_orig_mod.layers.2"]], "ddp.json"))
    assert [n for n, m in model.named_modules() if is_checkpointed(m)] == ["layers.1", "layers.2"]


def test_checkpointed_runs_give_identical_losses_with_dropout():
    path = plan_file([["layers.0"], ["layers.2"]], "dropout.json")
    args = [TINY, "--dropout", "0.2", "--steps", "3"]
    plain = loss_lines(run_python(args, shim=False)[0])
    by_env = loss_lines(run_python(args, GCPROF_PLAN=path)[0])
    recorded, events = run_python(args, fake=True, GCPROF_PLAN=path)
    by_code = loss_lines(run_python(args + ["--apply-plan", path], pythonpath=[SHIM])[0])
    assert plain == by_env == loss_lines(recorded) == by_code, (plain, by_env, by_code)
    assert "checkpointing 2 modules" in recorded.stderr, recorded.stderr
    # Dropout really was on: a different rate gives different losses.
    other = loss_lines(run_python([TINY, "--dropout", "0.5", "--steps", "3"], shim=False)[0])
    assert other != plain


def test_recomputation_is_marked_and_forward_not_counted_twice():
    path = plan_file([["layers.1"]], "one.json")
    proc, events = run_python([TINY, "--steps", "2"], fake=True, GCPROF_PLAN=path)
    loss_lines(proc)
    rs = ranges(events)
    assert all(r["end"] is not None for r in rs), "unclosed range"
    per_step = collections.Counter((r["step"], r["phase"], r["name"]) for r in rs)
    for step in (0, 1):
        assert per_step[(step, 0, "recompute layers.1")] == 1, per_step
        for name in ("layers.1", "layers.1.attn", "layers.1.attn.qkv", "layers.1.mlp", "layers.0"):
            assert per_step[(step, 1, name)] == 1, (step, name, per_step[(step, 1, name)])
            assert per_step[(step, 2, name)] == 1, (step, name, per_step[(step, 2, name)])
    # The recomputation runs inside layers.1's backward range.
    for step in (0, 1):
        rec = next(r for r in rs if r["step"] == step and r["name"] == "recompute layers.1")
        bwd = next(r for r in rs if r["step"] == step and r["phase"] == 2 and r["name"] == "layers.1")
        assert bwd["start"] < rec["start"] and rec["end"] < bwd["end"], (bwd, rec)


def test_a_plan_over_two_towers_checkpoints_both_roots():
    # CLIP-style: the image tower (an nn.Sequential, called first) and a
    # TextTower, separate roots of one loss. The recording names the second
    # by its class (module_ranges.py); its names apply to it (env_plan.py).
    job = [os.path.join(os.path.dirname(TINY), "loops_job.py"), "two-towers"]
    path = plan_file([["0"], ["TextTower.layers.1"]], "towers.json")
    plain = loss_lines(run_python(job, shim=False)[0])
    proc, events = run_python(job, fake=True, GCPROF_PLAN=path)
    assert loss_lines(proc) == plain, (proc.stderr, plain)
    assert "checkpointing 1 module: 0" in proc.stderr, proc.stderr
    assert "checkpointing 1 module: TextTower.layers.1" in proc.stderr, proc.stderr
    per_step = collections.Counter((r["step"], r["name"]) for r in ranges(events))
    for step in (0, 1, 2):
        assert per_step[(step, "recompute 0")] == 1, per_step
        assert per_step[(step, "recompute TextTower.layers.1")] == 1, per_step
    by_code = loss_lines(run_python(job + ["--apply-plan", path], pythonpath=[SHIM])[0])
    assert by_code == plain
    # A bad name under the other root is refused when that root is first
    # called, with near matches, before its step ran.
    proc, _ = run_python(job, GCPROF_PLAN=plan_file([["TextTower.layers.7"]], "towers-bad.json"))
    assert proc.returncode == 2, proc.stderr
    assert "'TextTower.layers.7': did you mean" in proc.stderr, proc.stderr
    assert "loss" not in proc.stdout


def test_three_instances_of_one_tower_class_are_named_and_planned_apart():
    # The model (an image tower) and three TextTower instances, separate
    # roots of one loss: each instance is named apart ("TextTower",
    # "TextTower[1]", "TextTower[2]", root_names.py), once per step, and a
    # plan naming the second instance checkpoints that one only.
    job = [os.path.join(os.path.dirname(TINY), "loops_job.py"), "three-towers"]
    plain = loss_lines(run_python(job, shim=False)[0])
    _, events = run_python(job, fake=True)
    forward = collections.Counter((r["step"], r["name"]) for r in ranges(events) if r["phase"] == 1)
    for step in (0, 1, 2):
        for tower in ("TextTower", "TextTower[1]", "TextTower[2]"):
            assert forward[(step, tower + ".layers.1")] == 1, (tower, sorted(forward))
    path = plan_file([["TextTower[1].layers.1"], ["TextTower[2].layers.0"]], "three.json")
    proc, events = run_python(job, fake=True, GCPROF_PLAN=path)
    assert loss_lines(proc) == plain, (proc.stderr, plain)
    assert "checkpointing 1 module: TextTower[1].layers.1" in proc.stderr, proc.stderr
    assert "checkpointing 1 module: TextTower[2].layers.0" in proc.stderr, proc.stderr
    recomputed = collections.Counter((r["step"], r["name"]) for r in ranges(events)
                                     if r["name"].startswith("recompute "))
    assert sorted(recomputed) == [(s, "recompute " + n) for s in (0, 1, 2)
                                  for n in ("TextTower[1].layers.1", "TextTower[2].layers.0")], recomputed
    assert set(recomputed.values()) == {1}, recomputed
    by_code = run_python(job + ["--apply-plan", path], pythonpath=[SHIM])[0]
    assert loss_lines(by_code) == plain, by_code.stderr
    # An instance the job does not have is refused before the second step.
    proc, _ = run_python(job, GCPROF_PLAN=plan_file([["TextTower[3].layers.0"]], "four.json"))
    assert proc.returncode == 2, proc.stderr
    assert "TextTower[3] was not called" in proc.stderr, proc.stderr
    assert "loss 1" not in proc.stdout, proc.stdout


def test_a_loss_module_made_anew_every_step_keeps_one_name():
    import torch
    from gcprof.root_names import RootNames, split_prefix
    names = RootNames()
    seen = {names.name(torch.nn.MSELoss()) for _ in range(3)}  # each gone after its call
    assert seen == {"MSELoss"}, seen
    a, b = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
    assert [names.name(a), names.name(b), names.name(a)] == ["Linear", "Linear[1]", "Linear"]
    assert names.name(torch.nn.Tanh(), assign=False) is None
    assert split_prefix("Encoder[12].layers.0") == ("Encoder", 12, "Encoder[12]")
    assert split_prefix("TextTower.layers.0") == ("TextTower", 0, "TextTower")
    assert split_prefix("0.attn") is None


def test_plan_never_applied_says_so_at_exit():
    path = plan_file([["layers.0"]], "unused.json")
    for job in ("print('no torch at all')",
                "import torch\nwith torch.no_grad():\n    torch.nn.Linear(2, 2)(torch.ones(1, 2))"):
        proc, _ = run_python(["-c", job], GCPROF_PLAN=path)
        assert proc.returncode == 0, proc.stderr
        assert "nothing was checkpointed" in proc.stderr and path in proc.stderr, proc.stderr
    proc, _ = run_python([TINY, "--steps", "1"], GCPROF_PLAN=plan_file([["layers.0"]], "used.json"))
    assert "nothing was checkpointed" not in proc.stderr, proc.stderr


# A launcher like torchrun: it runs no forward itself; the child it starts does.
LAUNCHER = """import os, subprocess, sys
print("marker", os.environ.get("GCPROF_PLAN_APPLIED"))
subprocess.run([sys.executable] + sys.argv[1:], check=True)
"""


def test_a_launcher_whose_child_applied_the_plan_does_not_warn():
    path = plan_file([["layers.0"]], "launched.json")
    proc, _ = run_python(["-c", LAUNCHER, TINY, "--steps", "1"], GCPROF_PLAN=path)
    assert proc.returncode == 0, proc.stderr
    assert "checkpointing 1 module: layers.0" in proc.stderr, proc.stderr
    assert "nothing was checkpointed" not in proc.stderr, proc.stderr
    marker = proc.stdout.split("marker ", 1)[1].split()[0]
    assert marker.endswith(".applied") and not os.path.exists(marker), "the owner removes its file"


def test_a_job_of_several_processes_that_never_trained_warns_once():
    path = plan_file([["layers.0"]], "launched-unused.json")
    proc, _ = run_python(["-c", LAUNCHER, "-c", "import torch"], GCPROF_PLAN=path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("nothing was checkpointed") == 1, proc.stderr


def test_a_job_stopped_by_a_signal_before_training_does_not_warn():
    # torchrun turns SIGTERM (verify --timeout) into an exception that ends it;
    # the job did not end of its own accord, so the plan was not "unapplied".
    path = plan_file([["layers.0"]], "stopped.json")
    job = ("import os, signal\n"
           "class Stopped(Exception): pass\n"
           "def stop(sig, frame): raise Stopped('got SIGTERM')\n"
           "signal.signal(signal.SIGTERM, stop)\n"
           "os.kill(os.getpid(), signal.SIGTERM)\n"
           "import time; time.sleep(30)\n")
    proc, _ = run_python(["-c", job], GCPROF_PLAN=path)
    assert proc.returncode == 1 and "Stopped: got SIGTERM" in proc.stderr, proc.stderr
    assert "nothing was checkpointed" not in proc.stderr, proc.stderr


def _selective_available():
    import torch.utils.checkpoint as cp
    if not hasattr(cp, "create_selective_checkpoint_contexts"):
        pytest.skip("selective checkpointing needs PyTorch 2.4 or newer")


def test_operator_ranges_nest_in_module_forwards_and_are_numbered_like_the_policy():
    _selective_available()
    proc, events = run_python([TINY, "--steps", "1"], fake=True, GCPROF_OPS="1")
    loss_lines(proc)
    rs = ranges(events)
    ops = [r for r in rs if r["name"].startswith("op aten.")]
    assert ops, "no operator ranges with GCPROF_OPS=1"
    names = {r["name"] for r in ops}
    assert "op aten.addmm.default" in names, names
    assert "op aten.detach.default" not in names  # selective checkpointing does not count it
    assert all(r["phase"] == 0 for r in ops)

    def innermost_module(op):
        around = [r for r in rs if r["phase"] == 1 and r["start"] < op["start"] and op["end"] < r["end"]]
        return max(around, key=lambda r: r["start"])["name"] if around else None
    # Nested in the innermost module forward: qkv's addmm inside layers.0.attn.qkv.
    assert any(innermost_module(r) == "layers.0.attn.qkv" and r["name"] == "op aten.addmm.default"
               for r in ops)
    proc, events = run_python([TINY, "--steps", "1"], fake=True)
    assert not [r for r in ranges(events) if r["name"].startswith("op ")], "ops recorded without --ops"


def test_selective_plan_keeps_the_listed_outputs_and_gives_identical_losses():
    _selective_available()
    save = ["aten.addmm.default#0", "aten._softmax.default#0"]
    segments = [{"kind": "module", "units": ["layers.0"], "module": "layers.0", "policy": "selective",
                 "save": save},
                {"kind": "module", "units": ["layers.2"], "module": "layers.2", "policy": "whole"}]
    path = plan_file([["layers.0"], ["layers.2"]], "selective.json", format="gcprof.plan/2",
                     segments=segments)
    args = [TINY, "--dropout", "0.2", "--steps", "3"]
    plain = loss_lines(run_python(args, shim=False)[0])
    by_env = loss_lines(run_python(args, GCPROF_PLAN=path)[0])
    assert plain == by_env, (plain, by_env)
    # The policy numbers calls per operator and keeps exactly the listed ones.
    import torch
    from torch.utils.checkpoint import CheckpointPolicy
    from gcprof.runtime.checkpointing import save_policy
    policy = save_policy(save)

    class Ctx:
        is_recompute = False
    answers = [(str(f), policy(Ctx(), f)) for f in (torch.ops.aten.addmm.default, torch.ops.aten.addmm.default,
                                                    torch.ops.aten._softmax.default)]
    assert [a for _, a in answers] == [CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_RECOMPUTE,
                                       CheckpointPolicy.MUST_SAVE], answers


def test_selective_plan_keeping_dropout_masks_gives_identical_losses():
    # A CPU dropout's mask is made, filled and scaled in three calls; kept
    # together (the last dropout of layers.0, both of layers.1), the replay
    # draws none of them and the cache entry filled after it was cached is
    # allowed. Saving the first mask alone would change the second one's
    # draw; the advisor never writes such a list (selective_options.h).
    _selective_available()

    def mask(n):
        return ["aten.empty_like.default#%d" % n, "aten.bernoulli_.float#%d" % n, "aten.div_.Scalar#%d" % n]
    segments = [{"kind": "module", "units": ["layers.0"], "module": "layers.0", "policy": "selective",
                 "save": ["aten.addmm.default#2"] + mask(1)},
                {"kind": "module", "units": ["layers.1"], "module": "layers.1", "policy": "selective",
                 "save": mask(0) + mask(1)}]
    path = plan_file([["layers.0"], ["layers.1"]], "dropout-masks.json", format="gcprof.plan/2",
                     segments=segments)
    args = [TINY, "--dropout", "0.2", "--steps", "3"]
    plain = loss_lines(run_python(args, shim=False)[0])
    by_env = loss_lines(run_python(args, GCPROF_PLAN=path)[0])
    assert plain == by_env, (plain, by_env)


def test_bad_selective_segments_are_refused():
    import gcprof
    from tiny_model import TinyGPT
    cases = {"policy": ([{"policy": "partial"}], "expected \"whole\" or \"selective\""),
             "save": ([{"policy": "selective", "save": ["mm"]}], "<aten op>#<occurrence>"),
             "count": ([], "one entry per")}
    for name, (segments, message) in cases.items():
        try:
            gcprof.apply_plan(TinyGPT(), plan_file([["layers.0"]], name + ".json", format="gcprof.plan/2",
                                                   segments=segments))
        except gcprof.PlanError as error:
            assert message in str(error), (name, error)
        else:
            raise AssertionError("no PlanError for " + name)

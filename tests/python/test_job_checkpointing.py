"""Plans applied on top of the job's own checkpointing (docs/plan.md): a
module a library already checkpoints (Hugging Face gradient checkpointing,
timm's grad_checkpointing) is refused by name before the first step; a
module the job wraps in torch.utils.checkpoint itself is recomputed once,
not twice, with a warning naming it."""
import atexit
import importlib.util
import json
import os
import shutil
import tempfile

import pytest

from harness import HERE, loss_lines, run_python

TMP = tempfile.mkdtemp(prefix="gcprof-job-ckpt-test-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)
JOB = os.path.join(HERE, "job_checkpointed.py")


def plan_file(checkpoint, name):
    plan = {"format": "gcprof.plan/1", "trace_run": 1, "strategy": "optimal", "budget_bytes": 1 << 20,
            "units": [], "checkpoint": checkpoint,
            "predicted": {"peak_bytes": 1, "recompute_ns": 1, "step_ns": 1}}
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        json.dump(plan, f)
    return path


def refused(proc, *names):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "already checkpointed by the job" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "no training forward" not in proc.stderr, proc.stderr
    assert "loss" not in proc.stdout, "a step ran with the plan on top of the job's checkpointing"
    for n in names:
        assert repr(n) in proc.stderr, (n, proc.stderr)


def test_hugging_face_gradient_checkpointing_is_refused_by_name():
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers not installed")
    proc, _ = run_python([JOB, "hf"], GCPROF_PLAN=plan_file([["transformer.h.0"]], "hf-layer.json"))
    refused(proc, "transformer.h.0")
    assert "Hugging Face" in proc.stderr and "gradient_checkpointing_disable()" in proc.stderr, proc.stderr
    # A sub-module of a checkpointed layer: the layer is named as the cause.
    proc, _ = run_python([JOB, "hf"], GCPROF_PLAN=plan_file([["transformer.h.1.mlp"]], "hf-mlp.json"))
    refused(proc, "transformer.h.1.mlp", "transformer.h.1")


def test_timm_grad_checkpointing_is_refused_by_name():
    proc, _ = run_python([JOB, "timm"], GCPROF_PLAN=plan_file([["layers.0"], ["layers.2"]], "timm.json"))
    refused(proc, "layers.0", "layers.2")
    assert "set_grad_checkpointing(False)" in proc.stderr, proc.stderr


def test_apply_plan_from_code_raises_and_leaves_the_model_alone():
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers not installed")
    code = ("import sys, gcprof, job_checkpointed as j\n"
            "m = j.build('hf')\n"
            "try:\n"
            "    gcprof.apply_plan(m, sys.argv[1])\n"
            "except gcprof.PlanError as e:\n"
            "    print('refused', 'gcprof' in type(m.transformer.h[0].forward).__qualname__, e)\n")
    proc, _ = run_python(["-c", code, plan_file([["transformer.h.0"]], "code.json")])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused False"), proc.stdout
    assert "'transformer.h.0'" in proc.stdout, proc.stdout


COUNT = """
import sys, torch, job_checkpointed as j
model = j.build(sys.argv[1])
calls = [0]
model.layers[1].attn.register_forward_pre_hook(lambda *a: calls.__setitem__(0, calls[0] + 1))
if len(sys.argv) > 2:
    import gcprof
    gcprof.apply_plan(model, sys.argv[2])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.Generator().manual_seed(1)
for step in range(2):
    tokens = torch.randint(0, 64, (4, 17), generator=data)
    logits = model(tokens[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 64), tokens[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    print("loss %d %r" % (step, loss.item()))
print("calls", calls[0])
"""


def calls(proc):
    return int(proc.stdout.rsplit("calls", 1)[1])


def test_a_module_the_job_checkpoints_itself_is_recomputed_once_with_a_warning():
    plan = plan_file([["layers.1"]], "manual.json")
    alone, _ = run_python(["-c", COUNT, "manual"])
    planned, _ = run_python(["-c", COUNT, "manual", plan])
    # A forward and one recomputation per step, as without the plan (it was 3).
    assert calls(alone) == 4, alone.stdout + alone.stderr
    assert calls(planned) == 4, planned.stdout + planned.stderr
    assert loss_lines(planned) == loss_lines(alone)
    assert "'layers.1' is recomputed in backward by a checkpoint of the job's own" in planned.stderr, \
        planned.stderr
    # A job without checkpoints of its own: the plan's recomputation, no warning.
    plain, _ = run_python(["-c", COUNT, "plain", plan])
    assert calls(plain) == 4 and "job's own" not in plain.stderr, plain.stdout + plain.stderr

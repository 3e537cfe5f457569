"""The recording hooks in process, with a fake recorder in place of the injector."""
import gc
import inspect
import weakref

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

import pytest

from harness import SHIM

import sys
sys.path.insert(0, SHIM)
from fake_recorder import FakeRecorder, ranges  # noqa: E402
from gcprof import startup  # noqa: E402


def inplace_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(inplace=True), nn.Linear(16, 4),
                         nn.ReLU(inplace=True))


def grads_of(model, x):
    model.zero_grad(set_to_none=True)
    out = model(x)
    out.sum().backward()
    return [p.grad.clone() for p in model.parameters()], out.detach().clone()


def saved_tensor_count(model, x):
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        model(x).sum().backward()
    return len(packed)


class UserCheckpointed(nn.Module):
    """A model that checkpoints a block itself (not through a gcprof plan)."""

    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(checkpoint(self.block, x, use_reentrant=False))


X = torch.randn(5, 8)
REFERENCE = {}
# Everything without the hooks is measured before they are installed below.
REFERENCE["grads"], REFERENCE["out"] = grads_of(inplace_model(), X)
REFERENCE["saved"] = saved_tensor_count(inplace_model(), X)
torch.manual_seed(1)
REFERENCE["ckpt_model"] = UserCheckpointed()
REC = FakeRecorder()
startup.install_profiler(torch, REC)


def test_inplace_relu_after_hooked_linear_gives_identical_grads():
    grads, out = grads_of(inplace_model(), X)
    assert torch.equal(out, REFERENCE["out"])
    for g, ref in zip(grads, REFERENCE["grads"]):
        assert torch.equal(g, ref)
    names = {(r["name"], r["phase"]) for r in ranges(REC.events)}
    for name in ("", "0", "1", "2", "3"):
        assert (name, 1) in names and (name, 2) in names, (name, sorted(names))


def test_hooks_do_not_change_what_autograd_saves_or_keeps_alive():
    assert saved_tensor_count(inplace_model(), X) == REFERENCE["saved"]
    model = inplace_model()
    x = torch.randn(5, 8, requires_grad=True)
    out = model(x)
    hidden = model[0](x)  # a module output whose graph is dropped without backward
    alive = [weakref.ref(out), weakref.ref(hidden)]
    out.sum().backward()
    del out, hidden
    gc.collect()
    assert all(r() is None for r in alive), "the shim kept a module output alive"


def test_each_inplace_call_names_the_storage_it_returned():
    # The replay finds a unit's in-place output by this address.
    REC.events.clear()
    model = inplace_model()
    returned = {}
    for i in (1, 3):
        model[i].register_forward_hook(
            lambda m, a, out, i=i: returned.__setitem__(
                str(i), getattr(out, "untyped_storage", out.storage)().data_ptr()))
    model(torch.randn(3, 8, requires_grad=True)).sum().backward()
    rs = ranges(REC.events)
    fwd = {r["name"]: r for r in rs if r["phase"] == 1}
    marks = [r for r in rs if r["name"].startswith("inplace output 0x")]
    assert len(marks) == 2, [r["name"] for r in rs]
    for name, mark in zip(("1", "3"), marks):
        assert fwd[name]["start"] < mark["start"] < mark["end"] < fwd[name]["end"], (name, mark)
        assert int(mark["name"].rsplit("0x", 1)[1], 16) == returned[name], (mark, returned)
        assert mark["phase"] == 0


def test_backward_range_follows_forward_and_layers_run_in_reverse():
    REC.events.clear()
    model = inplace_model()
    model(torch.randn(3, 8, requires_grad=True)).sum().backward()
    rs = ranges(REC.events)
    assert all(r["end"] is not None for r in rs), "unclosed range"
    fwd = {r["name"]: r for r in rs if r["phase"] == 1}
    bwd = {r["name"]: r for r in rs if r["phase"] == 2}
    assert set(fwd) == set(bwd) == {"", "0", "1", "2", "3"}
    for name in fwd:
        assert fwd[name]["end"] < bwd[name]["start"], name
    assert bwd["3"]["start"] < bwd["2"]["start"] < bwd["1"]["start"] < bwd["0"]["start"]
    # The root encloses its children in backward too.
    for name in "0123":
        assert bwd[""]["start"] < bwd[name]["start"] and bwd[name]["end"] < bwd[""]["end"]
    # Input bytes of the first Linear: 3x8 floats; its output 3x16.
    assert fwd["0"]["io"] == (3 * 8 * 4, 3 * 16 * 4), fwd["0"]["io"]


def test_a_module_call_makes_two_recorder_calls_forward_and_two_backward():
    # Each recorder call is a ctypes call into the injector (~1 us): a module's
    # forward is range_start + range_end_io (its sizes and its end in one call),
    # its backward range_start + range_end (bench/history/recording-overhead.md).
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
    x = torch.randn(2, 8, requires_grad=True)
    model(x).sum().backward()  # first call: names the tree
    REC.calls.clear()
    REC.events.clear()
    model(x).sum().backward()
    module_calls = 4  # the Sequential and its three children
    assert dict(REC.calls) == {"range_start": 2 * module_calls, "range_end_io": module_calls,
                               "range_end": module_calls}, dict(REC.calls)
    rs = ranges(REC.events)
    assert len(rs) == 2 * module_calls and all(r["end"] is not None for r in rs), rs
    assert all(r["io"] == (2 * 8 * 4, 2 * 8 * 4) for r in rs if r["phase"] == 1), rs


class Body(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(*[nn.Linear(8, 8) for _ in range(12)])

    def forward(self, h):
        return self.net(h)


def test_module_called_with_keyword_tensor_ends_when_its_input_gradient_is_done():
    hook_params = inspect.signature(torch.nn.modules.module.register_module_forward_hook).parameters
    if "with_kwargs" not in hook_params:
        pytest.skip("this PyTorch's global forward hooks do not see kwargs")
    REC.events.clear()
    stem, body, head = nn.Linear(8, 8), Body(), nn.Linear(8, 8)
    root = nn.ModuleDict({"stem": stem, "body": body, "head": head})
    x = torch.randn(2, 8, requires_grad=True)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.parts = root

        def forward(self, x):
            return self.parts["head"](self.parts["body"](h=self.parts["stem"](x)))

    Model()(x).sum().backward()
    rs = ranges(REC.events)
    bwd = {r["name"]: r for r in rs if r["phase"] == 2}
    # body's range closes when the gradient of its keyword input is complete,
    # before stem's backward begins (not at the end of the backward pass).
    assert bwd["parts.body"]["end"] < bwd["parts.stem"]["start"], (bwd["parts.body"], bwd["parts.stem"])


def test_no_grad_forward_opens_no_step_and_no_backward():
    REC.events.clear()
    with torch.no_grad():
        inplace_model()(X)
    kinds = {e[0] for e in REC.events}
    assert "step_begin" not in kinds, REC.events
    assert all(r["phase"] == 1 for r in ranges(REC.events))


def test_user_checkpoint_recomputation_is_a_recompute_range_not_a_forward():
    REC.events.clear()
    model = REFERENCE["ckpt_model"]
    model(torch.randn(4, 8)).sum().backward()
    rs = ranges(REC.events)
    forwards = [r["name"] for r in rs if r["phase"] == 1]
    assert forwards.count("block.0") == 1 and forwards.count("block") == 1, forwards
    recomputes = [r["name"] for r in rs if r["phase"] == 0]
    assert recomputes == ["recompute block"], recomputes
    assert all(r["end"] is not None for r in rs)


def test_steps_and_loss_from_optimizer_and_backward():
    model = inplace_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    # Close the step the earlier tests' forwards opened: their models are in
    # no optimizer, so the step waits for them (steps.py) until one optimizer
    # steps twice in it.
    opt.step()
    opt.step()
    REC.events.clear()
    losses = []
    for _ in range(3):
        loss = model(X).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    steps = [e for e in REC.events if e[0] in ("step_begin", "step_end")]
    first = steps[0][1] if steps else None
    assert steps == [(kind, first + i) for i in range(3)
                     for kind in ("step_begin", "step_end")], steps
    scalars = [(e[3], e[2]) for e in REC.events if e[0] == "scalar" and e[1] == "loss"]
    assert scalars == list(enumerate(losses, start=first)), (scalars, losses)


def test_a_tensor_passed_several_times_counts_once():
    # Self-attention is called as attn(h, h, h): its input is h, once. The
    # advisor finds the tensors a checkpoint holds by these bytes
    # (advisor/chain/checkpoint_arguments.h); counted three times they
    # matched another tensor of 3x h's size, and h was not held.
    attn = nn.MultiheadAttention(8, 2, batch_first=True)
    h = torch.randn(3, 5, 8, requires_grad=True)
    for call in (lambda: attn(h, h, h, need_weights=False), lambda: attn(h, key=h, value=h)):
        call()  # names the tree
        REC.events.clear()
        call()
        fwd = [r for r in ranges(REC.events) if r["phase"] == 1]
        assert len(fwd) == 1 and fwd[0]["io"][0] == 3 * 5 * 8 * 4, fwd


def test_autocast_cache_clears_are_user_ranges_and_change_nothing():
    """The clear that ends autocast's cast cache (autocast_clears.py): one user
    range per outermost autocast exit, none for a nested one; results as without."""
    from gcprof import autocast_clears
    from gcprof.native import USER
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    x = torch.randn(4, 8)

    def step():
        model.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out = model(x)
            loss = out.float().sum()
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters()]

    plain = step()
    rec = FakeRecorder()
    original = torch.clear_autocast_cache
    try:
        autocast_clears.install(torch, rec)
        marked = step()
    finally:
        torch.clear_autocast_cache = original
    clears = [r for r in ranges(rec.events) if r["name"] == autocast_clears.NAME]
    assert [(r["phase"], r["end"] is not None) for r in clears] == [(USER, True)]
    assert torch.equal(plain[0], marked[0])
    assert all(torch.equal(a, b) for a, b in zip(plain[1], marked[1]))

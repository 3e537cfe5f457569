"""Plans that cannot change training, in process on tiny models:
BatchNorm running statistics, inputs changed in place, a list of inputs the
caller appends to after the call (DenseNet), HF's key/value cache,
the in-place modules the recording reports, and the fingerprints that `verify` compares
(on a schedule of steps)."""
import copy
import sys

import pytest

from harness import SHIM, run_python

sys.path.insert(0, SHIM)


def _torch():
    try:
        import torch
    except ImportError:
        pytest.skip("no torch")
    return torch


def _bn_model(torch):
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = torch.nn.Conv2d(c, c, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(c)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x))) + x

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.blocks = torch.nn.Sequential(Block(8), Block(8), Block(8))
            self.norm = torch.nn.BatchNorm2d(8, momentum=None)  # cumulative average
            self.head = torch.nn.Linear(8, 4)

        def forward(self, x):
            x = self.norm(self.blocks(self.stem(x)))
            return self.head(x.mean(dim=(2, 3)))

    return Net()


def _train(torch, model, steps=3):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(4, 3, 8, 8, generator=gen, requires_grad=True)
        y = torch.randint(0, 4, (4,), generator=gen)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_batchnorm_statistics_identical_with_and_without_the_plan():
    torch = _torch()
    import gcprof
    plain = _bn_model(torch)
    planned = copy.deepcopy(plain)
    plan = {"format": "gcprof.plan/1", "checkpoint": [["blocks.0"], ["blocks.1"], ["norm"]]}
    assert gcprof.apply_plan(planned, plan) == ["blocks.0", "blocks.1", "norm"]
    a, b = _train(torch, plain), _train(torch, planned)
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), (key, a[key], b[key])
    assert int(b["blocks.0.bn.num_batches_tracked"]) == 3, b["blocks.0.bn.num_batches_tracked"]


def test_recomputation_would_count_batches_twice_without_the_restore():
    # The failure the restore prevents, shown on PyTorch's checkpoint alone:
    # if this ever stops being true, the restore is no longer needed.
    torch = _torch()
    from torch.utils.checkpoint import checkpoint
    bn = torch.nn.BatchNorm1d(3)
    x = torch.randn(5, 3, requires_grad=True)
    checkpoint(bn, x, use_reentrant=False).sum().backward()
    assert int(bn.num_batches_tracked) == 2


def _dense_block(torch):
    """torchvision DenseNet's pattern: each layer is passed the block's list
    of features, which the block then appends the layer's output to."""
    torch.manual_seed(0)

    class Layer(torch.nn.Module):
        def __init__(self, c):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(c)
            self.fc = torch.nn.Linear(c, 2)

        def forward(self, features):
            return self.fc(torch.relu(self.bn(torch.cat(features, 1))))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Layer(4 + 2 * i) for i in range(3)])

        def forward(self, x):
            features = [x]
            for layer in self.layers:
                features.append(layer(features))
            return torch.cat(features, 1)

    return Block()


def test_a_list_the_caller_appends_to_after_the_call_is_recomputed_as_it_was():
    torch = _torch()
    import gcprof
    plain = _dense_block(torch)
    planned = copy.deepcopy(plain)
    gcprof.apply_plan(planned, {"format": "gcprof.plan/1", "checkpoint": [["layers.0"], ["layers.1"]]})
    x = torch.randn(5, 4)
    for model in (plain, planned):
        model(x).pow(2).sum().backward()  # was: RuntimeError, the recompute saw 3 features, not 1
    for (name, a), (_, b) in zip(plain.named_parameters(), planned.named_parameters()):
        assert torch.equal(a.grad, b.grad), name


def test_hf_use_cache_is_off_in_training_and_kept_for_evaluation():
    torch = _torch()
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError:
        pytest.skip("no transformers")
    import gcprof
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=16))
    ids = torch.randint(0, 64, (2, 8))
    assert model(ids).past_key_values is not None  # HF's default: a cache
    gcprof.apply_plan(model, {"format": "gcprof.plan/1", "checkpoint": [["transformer.h.0"]]})
    model.train()
    out = model(ids, labels=ids, use_cache=True)
    assert out.past_key_values is None, "a training forward kept the key/value cache"
    out.loss.backward()
    model.eval()
    with torch.no_grad():
        assert model(ids, use_cache=True).past_key_values is not None


def test_hf_use_cache_is_off_in_a_decoder_inside_an_encoder_decoder():
    # VisionEncoderDecoderModel's own config has no use_cache; its GPT-2
    # decoder's has, and kept on, the checkpointed decoder layer's
    # cross-attention keys and values came from the cache in the
    # recomputation: torch's CheckpointError in backward.
    torch = _torch()
    try:
        import transformers as tf
    except ImportError:
        pytest.skip("no transformers")
    import gcprof
    torch.manual_seed(0)
    enc = tf.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                       image_size=16, patch_size=8)
    dec = tf.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=16,
                        add_cross_attention=True, is_decoder=True)
    cfg = tf.VisionEncoderDecoderConfig.from_encoder_decoder_configs(enc, dec)
    cfg.decoder_start_token_id, cfg.pad_token_id = 1, 0
    model = tf.VisionEncoderDecoderModel(config=cfg)
    gcprof.apply_plan(model, {"format": "gcprof.plan/1", "checkpoint": [["decoder.transformer.h.0"]]})
    model.train()
    out = model(pixel_values=torch.randn(2, 3, 16, 16), labels=torch.randint(2, 64, (2, 6)))
    out.loss.backward()  # was: CheckpointError, 2 tensors fewer saved in the recomputation
    assert model.decoder.transformer.h[0].crossattention.c_attn.weight.grad is not None
    model.eval()
    with torch.no_grad():
        assert model.decoder(torch.randint(2, 64, (1, 4)), encoder_hidden_states=torch.randn(1, 5, 32),
                             use_cache=True).past_key_values is not None


def test_a_layer_passed_a_key_value_cache_runs_unchanged_and_is_named():
    # peft's prefix tuning passes every layer a cache holding the prefix;
    # the layer's attention appends its keys and values to it, and a
    # recomputation appended them again: a RuntimeError in backward (keys of
    # 2 x 8 + 4 positions against 8 + 4).
    torch = _torch()
    try:
        import transformers as tf
        from peft import PrefixTuningConfig, get_peft_model
    except ImportError:
        pytest.skip("no transformers or peft")
    import gcprof

    def build():
        torch.manual_seed(0)
        cfg = tf.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                             num_key_value_heads=2, vocab_size=64, max_position_embeddings=32, use_cache=False)
        return get_peft_model(tf.LlamaForCausalLM(cfg), PrefixTuningConfig(task_type="CAUSAL_LM",
                                                                           num_virtual_tokens=8))

    ids = torch.randint(2, 64, (2, 4), generator=torch.Generator().manual_seed(1))
    plain, planned = build(), build()
    gcprof.apply_plan(planned, {"format": "gcprof.plan/1",
                                "checkpoint": [["base_model.model.layers.0"], ["base_model.model.layers.1.mlp"]]})
    losses = []
    for m in (plain, planned):
        m.train()
        loss = m(input_ids=ids, labels=ids).loss
        loss.backward()  # was: RuntimeError, the recomputation extended the cache a second time
        losses.append(loss.item())
    assert losses[0] == losses[1]
    for (name, a), (_, b) in zip(plain.named_parameters(), planned.named_parameters()):
        assert (a.grad is None) == (b.grad is None), name
        if a.grad is not None:
            assert torch.equal(a.grad, b.grad), name


_INPLACE_JOB = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8),
                            torch.nn.ReLU(inplace=True), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    loss = model(torch.randn(6, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss done")
"""


def test_recording_reports_in_place_modules_and_fingerprints_the_first_steps():
    _torch()
    proc, events = run_python(["-c", _INPLACE_JOB], fake=True)
    assert proc.returncode == 0, proc.stderr
    scalars = [e for e in events if e[0] == "scalar"]
    inplace = [e[1] for e in scalars if e[1].startswith("inplace ")]
    assert inplace == ["inplace 2"], inplace  # the ReLU, once; not the Linear or BatchNorm
    for name in ("loss", "grad_norm", "buffer_norm", "hook_ns_per_call"):
        assert [e[3] for e in scalars if e[1] == name] == [0, 1], (name, scalars)
    cost = [e[2] for e in scalars if e[1] == "hook_ns_per_call"]
    assert all(0 < c < 1e7 for c in cost), cost


def test_fingerprints_see_gradients_and_running_statistics():
    torch = _torch()
    from gcprof import fingerprints
    model = _bn_model(torch)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert fingerprints.grad_norm(torch, opt) is None  # no gradients yet
    before = fingerprints.buffer_norm(torch, model)
    model(torch.randn(4, 3, 8, 8)).sum().backward()
    g = fingerprints.grad_norm(torch, opt)
    expected = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters())).item()
    assert abs(g - expected) <= 1e-7 * expected, (g, expected)  # verify's tolerance is 1e-6
    assert fingerprints.buffer_norm(torch, model) != before
    assert fingerprints.buffer_norm(torch, torch.nn.Linear(2, 2)) is None


def test_fingerprints_are_reproducible_close_to_float64_and_see_small_changes():
    # Each path of fingerprints._norm: float32 tensors below and above 16 rows of
    # 4096 elements (one fused float32 call; rows), float64, bfloat16, a counter.
    torch = _torch()
    from gcprof import fingerprints
    gen = torch.Generator().manual_seed(3)
    tensors = [torch.randn(300_001, generator=gen), torch.randn(64, 64, generator=gen),
               torch.randn(1000, generator=gen) * 30, torch.randn(7, dtype=torch.float64, generator=gen),
               torch.randn(100, generator=gen).to(torch.bfloat16), torch.tensor(12345)]
    value = fingerprints._norm(torch, tensors)
    exact = torch.sqrt(sum((t.double() ** 2).sum() for t in tensors)).item()
    assert abs(value - exact) <= 1e-7 * exact, (value, exact)
    # Two identical runs: bit-identical (verify compares recorded and re-run values).
    assert fingerprints._norm(torch, [t.clone() for t in tensors]) == value
    # A gradient scaled by 1 + eps moves the norm by eps times its share of the
    # squared norm (within 10%), whichever path that tensor takes (bfloat16 by
    # a step it can represent).
    for i in range(len(tensors) - 1):
        eps = 1 / 64 if tensors[i].dtype == torch.bfloat16 else 1e-4
        changed = [t.clone() for t in tensors]
        changed[i] *= 1 + eps
        moved = abs(fingerprints._norm(torch, changed) - value) / value
        share = (changed[i].double() ** 2).sum().item() / exact ** 2 - \
            (tensors[i].double() ** 2).sum().item() / exact ** 2
        assert abs(moved - share / 2) <= 0.1 * share / 2, (i, moved, share / 2)


def test_fingerprint_schedule_is_the_first_three_steps_then_every_eighth():
    from gcprof import fingerprints
    assert [s for s in range(41) if fingerprints.scheduled(s)] == [0, 1, 2, 8, 16, 24, 32, 40]


# Ten steps of _bn_model with blocks.0 and norm checkpointed (PLAN=1) or not,
# with the running-state restore of checkpointing.py turned off (RESTORE=0):
# what a plan that changes running statistics looks like.
_BN_JOB = """
import os, sys, torch
sys.path.insert(0, os.environ["TESTS"])
import gcprof
from gcprof.runtime import checkpointing
from test_safe_plans import _bn_model, _train
if os.environ.get("RESTORE") == "0":
    checkpointing._restore = lambda state: None
model = _bn_model(torch)
if os.environ.get("PLAN") == "1":
    gcprof.apply_plan(model, {"format": "gcprof.plan/1", "checkpoint": [["blocks.0"], ["norm"]]})
_train(torch, model, steps=10)
"""


def _bn_scalars(**env):
    _torch()
    from harness import HERE
    proc, events = run_python(["-c", _BN_JOB], fake=True, TESTS=HERE, **env)
    assert proc.returncode == 0, proc.stderr
    scalars = {}
    for e in events:
        if e[0] == "scalar":
            scalars.setdefault(e[1], {})[e[3]] = e[2]
    return scalars


def test_recording_fingerprints_the_scheduled_steps_and_verify_sees_a_changed_statistic():
    plain = _bn_scalars()
    assert sorted(plain["loss"]) == list(range(10)), plain["loss"]
    for name in ("grad_norm", "buffer_norm"):
        assert sorted(plain[name]) == [0, 1, 2, 8], (name, plain[name])
    # The same plan with and without the restore: verify compares these
    # values step by step (advisor/verify/verification.cpp).
    planned = _bn_scalars(PLAN="1")
    broken = _bn_scalars(PLAN="1", RESTORE="0")
    assert planned["buffer_norm"] == plain["buffer_norm"], (planned["buffer_norm"], plain["buffer_norm"])
    assert planned["grad_norm"] == plain["grad_norm"]
    assert broken["buffer_norm"][0] != plain["buffer_norm"][0], "the first fingerprint misses it"
    assert broken["loss"][0] == plain["loss"][0]  # which the loss of that step does not show

"""The peers bench's wrappers (bench/plan/peer_rules.py, peer_milp.py) do
what their users' code does, on a tiny model in-process: they checkpoint
what they say, keep the losses of the job without checkpointing, and
PyTorch's SAC estimators run on a CPU with the perf_counter timer.
torch.compile is left out: compiling takes minutes."""
import contextlib
import functools
import io
import json
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "plan"))
import peer_job  # noqa: E402
import peer_milp  # noqa: E402
import peer_rules  # noqa: E402
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointWrapper  # noqa: E402

TINY = ["--layers", "3", "--hidden", "32", "--heads", "2", "--seq", "16", "--batch", "2", "--vocab", "64",
        "--steps", "2"]


def losses(model_name, peer):
    """The losses peer_job.py prints, one per step."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        peer_job.main(["--model", model_name, "--peer", peer, *TINY])
    return [float(line.split()[-1]) for line in buf.getvalue().splitlines()]


class PeerWrappers(unittest.TestCase):
    def test_every_kth_block_is_wrapped(self):
        a = peer_job.parse_args(["--model", "gpt", *TINY])
        model, blocks, _ = peer_job.build(a)
        peer_rules.checkpoint_every(blocks, 2)
        self.assertEqual([isinstance(b, CheckpointWrapper) for b in blocks], [True, False, True])

    def test_checkpointed_peers_keep_the_losses(self):
        # The GPT only: importing transformers for GPT-2 takes most of a
        # test's budget (the bench checks GPT-2's losses on every run).
        plain = losses("gpt", "none")
        for peer in ("every:2", "titan"):
            self.assertEqual(losses("gpt", peer), plain, peer)

    def test_titan_rule_saves_matmuls_and_recomputes_every_second_mm(self):
        policy = peer_rules.titan_policy()
        forward = type("Ctx", (), {"is_recompute": False})()
        save, recompute = torch.utils.checkpoint.CheckpointPolicy.MUST_SAVE, \
            torch.utils.checkpoint.CheckpointPolicy.PREFER_RECOMPUTE
        aten = torch.ops.aten
        self.assertEqual(policy(forward, aten.addmm.default), save)
        self.assertEqual(policy(forward, aten.gelu.default), recompute)
        self.assertEqual([policy(forward, aten.mm.default) for _ in range(4)], [save, recompute, save, recompute])

    def test_milp_decisions_are_applied_and_keep_the_losses(self):
        # A save-list as the solve writes it: the first addmm of the first
        # block saved, the rest recomputed.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "decisions.json")
            with open(path, "w") as f:
                json.dump({"modules": {"layers.0": {"discard": 0.5, "ops": [["addmm", 1], ["gelu", 0]]}}}, f)
            self.assertEqual(losses("gpt", "milp:" + path), losses("gpt", "none"))
            model, blocks, _ = peer_job.build(peer_job.parse_args(["--model", "gpt", *TINY]))
            peer_milp.apply_decisions(model, path)
            self.assertIsInstance(blocks[0].forward, functools.partial)

    def test_runtime_estimator_runs_on_cpu_with_the_perf_counter_timer(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.distributed._tools.runtime_estimator import RuntimeEstimator
        with peer_milp.perf_counter_timer(), FakeTensorMode():
            layer = torch.nn.Linear(8, 8)
            x = torch.randn(4, 8)
            est = RuntimeEstimator()
            with est(estimate_mode_type="operator-level-benchmark"):
                layer(x).sum().backward()
        self.assertGreater(est.total_runtime, 0)
        self.assertIsNot(torch.Event, peer_milp.PerfCounterEvent)  # the real one restored


if __name__ == "__main__":
    unittest.main()

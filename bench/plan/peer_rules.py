"""The checkpointing rules users apply by hand, as they apply them: every K-th
block under torch.utils.checkpoint, torchtitan's per-block selective rule,
and torch.compile with an activation memory budget (peer_job.py).

torchtitan wraps each transformer block with PyTorch's checkpoint_wrapper
(non-reentrant); its selective "op" mode passes a context_fn that saves the
outputs of its save-list (matrix products, attention kernels, max) and
recomputes the rest, except that every second mm of a forward is recomputed
too. The save-list is matched here by operator name, with addmm and bmm
included: on CPU nn.Linear and the eager attention's matmuls dispatch to
them rather than to mm (gcprof's `--strategy matmuls` uses the same names).
"""
import collections
import functools

import torch
import torch._functorch.config  # noqa: F401  (activation_memory_budget)
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

TITAN_SAVED = {
    "mm", "addmm", "bmm", "linear", "convolution", "_scaled_mm",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math",
    "_scaled_dot_product_fused_attention_overrideable", "_scaled_dot_product_flash_attention_for_cpu",
    "max", "topk",
}


def _wrap(blocks, indices, **kwargs):
    for i in indices:
        blocks[i] = checkpoint_wrapper(blocks[i], checkpoint_fn=checkpoint, use_reentrant=False, **kwargs)


def checkpoint_every(blocks, k):
    """Checkpoints blocks 0, k, 2k, ...: "every k-th layer"."""
    _wrap(blocks, range(0, len(blocks), k))


def titan_policy():
    """A fresh policy per checkpointed call: its mm count restarts in each
    forward and in each recomputation, so that both choose the same calls."""
    counts = collections.Counter()

    def policy(ctx, op, *args, **kwargs):
        name = op.overloadpacket.__name__
        if name not in TITAN_SAVED:
            return CheckpointPolicy.PREFER_RECOMPUTE
        if name == "mm":
            mode = "recompute" if ctx.is_recompute else "forward"
            counts[mode] += 1
            if counts[mode] % 2 == 0:
                return CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE
    return policy


def titan_context():
    return create_selective_checkpoint_contexts(titan_policy())


def checkpoint_selective(blocks):
    """torchtitan's `selective_ac_option = "op"` on every block."""
    _wrap(blocks, range(len(blocks)), context_fn=titan_context)


def compiled(model, budget=None):
    """torch.compile's min-cut partitioner with activation_memory_budget
    (1.0: save what the default partitioner saves; 0.0: recompute all it can);
    None: torch.compile as it comes (the setting untouched, 1.0)."""
    if budget is not None:
        torch._functorch.config.activation_memory_budget = budget
    return torch.compile(model)


def checkpoint_with(module, context_fn):
    """Wraps one module's forward with a selective checkpoint (peer_milp.py)."""
    module.forward = functools.partial(_checkpointed, module.forward, context_fn)


def _checkpointed(forward, context_fn, *args, **kwargs):
    return checkpoint(forward, *args, use_reentrant=False, context_fn=context_fn, **kwargs)

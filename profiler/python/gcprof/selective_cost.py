"""What PyTorch's selective checkpointing costs per operator call, in this job.

A selective checkpoint (a save-list, docs/plan.md "Selective segments")
runs every aten call of its unit's forward through a TorchDispatchMode and
the plan's policy, once in the forward and once in the recomputation. That
is python work per call, ~18 us on this project's 2-core VM: more than many
small operators take, so a save-list can be slower than recomputing the
whole unit. The advisor adds it to a save-list's recompute
(advisor/chain/recompute_cost.h) from the scalar `selective_ns_per_op` that
`gcprof record --ops` stores once, after the first step (steps.py): a
function of _CALLS small calls on a tiny CPU tensor, checkpointed whole and
with the runtime's own save-list policy, forward and backward, in
alternating rounds; the difference of the medians per call.

It runs between the first and the second step (no step's time or
allocations include it) and uses torch.autograd.grad, not backward, so the
step tracker never takes it for the job's loss.
"""
import statistics
from time import thread_time_ns as _cpu

_CALLS = 64   # aten calls in the checkpointed function's forward
_ROUNDS = 5


def measure(torch):
    """ns per operator call of a selective checkpoint over a whole one, or
    None where PyTorch has no selective checkpointing (< 2.4)."""
    try:
        from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts
    except ImportError:
        return None
    from .runtime.checkpointing import save_policy

    def body(t):
        for _ in range(_CALLS // 2):
            t = t * 1.0
            t = t + 0.0
        return t

    def context():
        return create_selective_checkpoint_contexts(save_policy(["aten.mul.Tensor#0"]))

    x = torch.ones(4, requires_grad=True)

    def whole():
        return checkpoint(body, x, use_reentrant=False)

    def saved():
        return checkpoint(body, x, use_reentrant=False, context_fn=context)

    def cpu_of(run):
        start = _cpu()
        torch.autograd.grad(run().sum(), x)
        return _cpu() - start

    cpu_of(whole), cpu_of(saved)  # first calls build caches
    plain, selected = [], []
    with torch.random.fork_rng(devices=[]):  # the job's random numbers stay its own
        for r in range(_ROUNDS):
            for run, out in ((whole, plain), (saved, selected)) if r % 2 else ((saved, selected), (whole, plain)):
                out.append(cpu_of(run))
    return max(0.0, (statistics.median(selected) - statistics.median(plain)) / _CALLS)

"""What PyTorch's dispatch into Python costs per operator call, in this job.

`gcprof record --ops` measures two figures once, between the first and the
second step (steps.py), on a function of _CALLS small calls on a tiny CPU
tensor, in alternating rounds, the difference of the medians per call:

- `op_dispatch_ns_per_call`: a TorchDispatchMode that does nothing but call
  the operator, against no mode. The operator mode (op_ranges.py) times
  its own work per call (`op_hook_ns_per_call`); this is the part before
  and after it, inside PyTorch (~6.5 us a call on this project's 2-core
  VM, more than the mode's own ~2.6 us). The advisor subtracts both from
  forward times recorded with --ops (advisor/chain/recording_cost.h).
- `selective_ns_per_op`: the function checkpointed with the runtime's own
  save-list policy against checkpointed whole, forward and backward.
  PyTorch's selective checkpointing sends every operator call of the
  unit's forward through its policy, in the forward and again in the
  recomputation (~17 us a call here, more than many small operators
  take), so a save-list can be slower than recomputing the whole unit. The
  advisor adds it to a save-list's recompute (advisor/chain/recompute_cost.h).

No step's time or allocations include it. It uses torch.autograd.grad,
not backward, so the step tracker never takes it for the job's loss, and
the job's random numbers stay its own.
"""
import statistics
from time import thread_time_ns as _cpu

_CALLS = 64   # aten calls in the function
_ROUNDS = 5


def _body(t):
    for _ in range(_CALLS // 2):
        t = t * 1.0
        t = t + 0.0
    return t


def _per_call(torch, base, other):
    """ns per call of `other` over `base` (callables returning CPU ns)."""
    base(), other()  # first calls build caches
    a, b = [], []
    with torch.random.fork_rng(devices=[]):
        for r in range(_ROUNDS):
            for run, out in ((base, a), (other, b)) if r % 2 else ((other, b), (base, a)):
                out.append(run())
    return max(0.0, (statistics.median(b) - statistics.median(a)) / _CALLS)


def _cpu_of(fn):
    def timed():
        start = _cpu()
        fn()
        return _cpu() - start
    return timed


def python_dispatch(torch):
    """ns per operator call of a do-nothing TorchDispatchMode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Nothing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    x = torch.ones(4)

    def in_mode():
        with _Nothing():
            _body(x)

    return _per_call(torch, _cpu_of(lambda: _body(x)), _cpu_of(in_mode))


def selective_checkpointing(torch):
    """ns per operator call of a selective checkpoint over a whole one, or
    None where PyTorch has no selective checkpointing (< 2.4)."""
    try:
        from torch.utils.checkpoint import checkpoint, create_selective_checkpoint_contexts
    except ImportError:
        return None
    from .runtime.checkpointing import save_policy

    def context():
        return create_selective_checkpoint_contexts(save_policy(["aten.mul.Tensor#0"]))

    x = torch.ones(4, requires_grad=True)

    def whole():
        torch.autograd.grad(checkpoint(_body, x, use_reentrant=False).sum(), x)

    def saved():
        torch.autograd.grad(checkpoint(_body, x, use_reentrant=False, context_fn=context).sum(), x)

    return _per_call(torch, _cpu_of(whole), _cpu_of(saved))


def measure(torch):
    """{scalar name: ns per call} of what could be measured."""
    out = {"op_dispatch_ns_per_call": python_dispatch(torch)}
    selective = selective_checkpointing(torch)
    if selective is not None:
        out["selective_ns_per_op"] = selective
    return out

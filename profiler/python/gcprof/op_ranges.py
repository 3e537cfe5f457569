"""Operator ranges inside module forwards (`gcprof record --ops`, GCPROF_OPS=1).

For selective checkpointing (docs/plan.md, "Selective segments") the advisor
needs, per unit, every aten operator its forward runs, in order, with the
memory each one makes and its time. While a training forward of a root module
runs (module_ranges.py opens and closes it), a TorchDispatchMode turns every
aten call into a user range `op <overload>` (`op aten.mm.default`) nested in
the innermost module's forward range, so the allocations it makes are
attributed to it by the injector like any other range. The advisor numbers
the calls of one operator inside a unit's forward window (`aten.mm.default#2`)
the way PyTorch's selective checkpointing numbers them when it applies a
plan: the same operators, in the same order, with the ones it ignores
(SAC_IGNORED_OPS: detach, which checkpointing adds a varying number of)
left out here too.

Off (no GCPROF_OPS): the mode is never created or entered; nothing costs.
The mode times itself; the mean per operator call is recorded per step as the
scalar `op_hook_ns_per_call` and the advisor subtracts it from forward times,
as it does for the module hooks.
"""
from time import perf_counter_ns as _clock

from . import failsafe
from .native import USER

PREFIX = "op "  # read by the advisor (advisor/units/op_table.cpp)


def ignored_ops(torch):
    """The operators selective checkpointing does not count (torch.utils.checkpoint)."""
    try:
        from torch.utils.checkpoint import SAC_IGNORED_OPS
        return set(SAC_IGNORED_OPS)
    except ImportError:
        return {torch.ops.aten.detach.default}


class OpRanges:
    def __init__(self, torch, recorder):
        from torch.utils._python_dispatch import TorchDispatchMode

        self._rec = recorder
        self._ignored = ignored_ops(torch)
        self._names = {}
        self._ns = 0
        self._calls = 0
        owner = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return owner._dispatch(func, args, kwargs or {})

        self._mode_type = _Mode
        self._mode = None
        self._depth = 0

    def begin(self):
        """Enters the mode (a root module's training forward starts)."""
        self._depth += 1
        if self._depth == 1:
            self._mode = self._mode_type()
            self._mode.__enter__()

    def end(self):
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0 and self._mode is not None:
            mode, self._mode = self._mode, None
            mode.__exit__(None, None, None)

    def take_cost(self):
        """Mean ns of the mode's own time per operator call since the last call."""
        ns, calls = self._ns, self._calls
        self._ns = self._calls = 0
        return ns / calls if calls else None

    def _dispatch(self, func, args, kwargs):
        if func in self._ignored:
            return func(*args, **kwargs)
        t0 = _clock()
        name = self._names.get(func)
        if name is None:
            name = self._names[func] = PREFIX + str(func)
        try:
            rid = self._rec.range_start(name, USER)
        except Exception as exc:
            failsafe.internal_error("the operator range", exc)
            rid = 0
        t1 = _clock()
        try:
            return func(*args, **kwargs)
        finally:
            t2 = _clock()
            self._rec.range_end(rid)
            self._calls += 1
            self._ns += (t1 - t0) + (_clock() - t2)

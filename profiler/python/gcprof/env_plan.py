"""GCPROF_PLAN: apply a plan to an unmodified job before its first step.

The plan is applied to the root of the first module call made with grad
enabled (the first training forward): its named_modules() are the names the
recording used. Registered before the profiler's own hooks so the forward
range of that very call already sees the checkpointed children.
A plan that does not fit the model ends the job with exit code 2 and a
message naming near matches: running on without the plan would make a
verification measure the wrong thing.
A job that ends without ever running such a forward (it never imported
torch, or only evaluated) says so on stderr at exit: a plan is never left
silently unapplied.
"""
import sys

from .plan import PlanError, apply_plan, exit_with


_applied = []  # the plan paths applied in this process


def warn_if_unapplied(path):
    """At exit: one line when GCPROF_PLAN was set but nothing applied it."""
    if path not in _applied:
        sys.stderr.write("gcprof: warning: GCPROF_PLAN=%s was set but the job ran no training forward "
                         "(a module call with grad enabled), so nothing was checkpointed\n" % path)
        sys.stderr.flush()


class PlanOnFirstForward:
    def __init__(self, torch, path):
        self._torch = torch
        self._path = path
        self._handle = None

    def install(self):
        hooks = self._torch.nn.modules.module
        self._handle = hooks.register_module_forward_pre_hook(self._first_forward)

    def _first_forward(self, module, args):
        if self._handle is None or not self._torch.is_grad_enabled():
            return None
        self._handle.remove()
        self._handle = None
        try:
            names = apply_plan(module, self._path)
        except PlanError as error:
            exit_with(error)
        except Exception as exc:
            exit_with("%s: could not apply the plan to %s (%s: %s)"
                      % (self._path, type(module).__name__, type(exc).__name__, exc))
        _applied.append(self._path)
        sys.stderr.write("gcprof: %s: checkpointing %d module%s: %s\n"
                         % (self._path, len(names), "" if len(names) == 1 else "s",
                            ", ".join(names) if names else "(none)"))
        return None

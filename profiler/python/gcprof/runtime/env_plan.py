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

"The job" is every process under the first one that armed the plan: a
torchrun launcher runs no forward itself, its ranks do. That first process
(the job's *owner*) makes a small file and names it in GCPROF_PLAN_APPLIED,
which its descendants inherit; a process that applies the plan appends its
pid there. Only the owner warns, at exit, when nobody wrote to the file and
the owner ended of its own accord: a job stopped by a signal that Python
turned into an exception (torchrun's SIGTERM handling, `verify --timeout`) or
ended by an uncaught exception already says why it did not train.
"""
import os
import sys
import tempfile
import threading

from . import plan as _plan
from .plan import PlanError, checked_names, load_plan, names_of_other_roots, resolve, wrap
from ..root_names import RootNames
from ..tree_names import has_parameters

APPLIED_ENV = "GCPROF_PLAN_APPLIED"

_applied = []  # the plan paths applied in this process
_owner = False  # this process armed the plan for the job (arm_job)


def arm_job(path):
    """At start-up with GCPROF_PLAN set: makes this process the job's owner
    (returns True) unless an ancestor already is."""
    global _owner
    marker = os.environ.get(APPLIED_ENV)
    if marker and os.path.exists(marker):
        return False
    _owner = True
    try:
        fd, marker = tempfile.mkstemp(prefix="gcprof-plan-", suffix=".applied")
        os.close(fd)
    except OSError:
        marker = ""  # no file: this process still speaks for itself
    os.environ[APPLIED_ENV] = marker
    return True


def _note_applied():
    marker = os.environ.get(APPLIED_ENV)
    if not marker:
        return
    try:
        with open(marker, "a") as f:
            f.write("%d\n" % os.getpid())
    except OSError:
        pass  # the owner is gone or its file too; nobody is left to warn


def _applied_in_job(path):
    if path in _applied:
        return True
    marker = os.environ.get(APPLIED_ENV)
    try:
        return bool(marker) and os.path.getsize(marker) > 0
    except OSError:
        return False


def warn_if_unapplied(path):
    """At the owner's exit: one line when no process of the job applied the
    plan and the job ended by itself."""
    try:
        ended_by_exception = getattr(sys, "last_value", None) is not None
        if not ended_by_exception and not _refused and not _plan.refused and not _applied_in_job(path):
            sys.stderr.write("gcprof: warning: GCPROF_PLAN=%s was set but the job ran no training "
                             "forward (a module call with grad enabled), so nothing was "
                             "checkpointed\n" % path)
            sys.stderr.flush()
    finally:
        marker = os.environ.get(APPLIED_ENV)
        if marker:
            try:
                os.unlink(marker)
            except OSError:
                pass


def exit_with(error):
    """Ends the job for a plan that cannot be applied. The plan counts as
    handled for the job: the error said why nothing was checkpointed, so no
    process adds "the job ran no training forward" at exit."""
    _note_applied()
    _refused.append(str(error))
    _plan.exit_with(error)


_refused = []  # the errors that ended this process


class PlanOnFirstForward:
    """Applies the plan at the first training forward. A job that trains
    other roots besides the model (CLIP's text tower next to its image
    tower, three instances of one Encoder) has their modules named with
    their class name in front ("TextTower.layers.0", "Encoder[1].layers.0":
    root_names.py): those names are applied when that root is first called
    outside the model, the k-th live instance of its class counted as the
    recording counted it (root calls, with grad or not, from the job's
    start), and a name whose root was not called by the model's next
    training forward ends the job as a plan that does not fit does."""

    def __init__(self, torch, path):
        self._torch = torch
        self._path = path
        self._handles = []
        self._model = None
        self._model_modules = set()  # ids of the model's modules
        self._plan = None
        self._pending = {}  # prefix of another root ("TextTower", "Encoder[1]") -> its names
        self._roots = RootNames()
        self._tls = threading.local()  # .depth: module calls under way on this thread
        self._graph_task = getattr(torch._C, "_current_graph_task_id", lambda: -1)

    def install(self):
        hooks = self._torch.nn.modules.module
        self._handles.append(hooks.register_module_forward_pre_hook(self._first_forward))
        try:
            post = hooks.register_module_forward_hook(self._left, always_call=True)
        except TypeError:  # PyTorch 1.13: not called when a forward raises (see _first_forward)
            post = hooks.register_module_forward_hook(self._left)
        self._handles.append(post)

    def _left(self, module, args, output):
        self._tls.depth = max(0, getattr(self._tls, "depth", 0) - 1)

    def _first_forward(self, module, args):
        depth = getattr(self._tls, "depth", 0)
        if module is self._model:
            depth = 0  # the model is never called inside itself (a raised forward's stale depth)
        self._tls.depth = depth + 1
        if not self._handles or depth or self._graph_task() != -1:
            return None  # not a root call, or a recomputation inside backward
        grad = self._torch.is_grad_enabled()
        if self._model is None:
            if grad and self._in_data_worker():
                self._done()  # a DataLoader worker calls transforms, never the model
            elif grad and has_parameters(module):
                self._apply_to_model(module)
            else:
                self._roots.name(module)  # a root before the model, as the recording names it
        elif module is self._model:
            if grad:
                self._done()
                exit_with("%s: %s named in the plan but %s not called before the model's (%s) "
                          "next training forward; the plan's other roots must be called in the "
                          "step (their instances counted in the order the job first calls them)" % (
                              self._path, ", ".join(n for ns in self._pending.values() for n in ns),
                              " or ".join(self._pending) + (" was" if len(self._pending) == 1 else " were"),
                              type(module).__name__))
        elif id(module) not in self._model_modules:
            prefix = self._roots.name(module)
            names = self._pending.pop(prefix, None)
            if names is not None:
                self._apply(module, names, prefix)
        if not self._pending and self._model is not None:
            self._done()
        return None

    def _done(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def _in_data_worker(self):
        data = getattr(getattr(self._torch, "utils", None), "data", None)
        info = getattr(data, "get_worker_info", None)
        return info is not None and info() is not None

    def _apply_to_model(self, model):
        self._model = model
        try:
            self._plan = load_plan(self._path)
            names = checked_names(self._plan, self._path)
            self._pending = names_of_other_roots(names, model, module_class_names(self._torch))
            names = [n for n in names if not any(n in ns for ns in self._pending.values())]
        except PlanError as error:
            exit_with(error)
        if not _owner and names and not self._pending and not _any_module_named(model, names):
            # A process the job started (a data-prep subprocess, a pool
            # worker) training a model the plan has not one module of: it
            # is not the process the plan was made for, which a plan that
            # does not fit ends the job in (a rank of a torchrun job
            # trains the recorded model). Ending it would end the job.
            self._done()
            sys.stderr.write("gcprof: %s: process %d trains a %s, which has none of the plan's "
                             "modules; left unchanged (the plan is for the job's process that "
                             "trains the recorded model)\n"
                             % (self._path, os.getpid(), type(model).__name__))
            return
        if self._pending:
            self._model_modules = {id(m) for m in model.modules()}
        self._apply(model, names, "")
        _applied.append(self._path)
        _note_applied()

    def _apply(self, module, names, prefix):
        try:
            targets = resolve(module, names, self._path, prefix=prefix)
            wrap(targets, self._plan, module, self._path)
        except PlanError as error:
            exit_with(error)
        except Exception as exc:
            exit_with("%s: could not apply the plan to %s (%s: %s)"
                      % (self._path, prefix or type(module).__name__, type(exc).__name__, exc))
        sys.stderr.write("gcprof: %s: checkpointing %d module%s: %s\n"
                         % (self._path, len(names), "" if len(names) == 1 else "s",
                            ", ".join(names) if names else "(none)"))


def _any_module_named(model, names):
    wanted = set(names)
    return any(name in wanted for name, _ in model.named_modules())


def module_class_names(torch):
    """The names of every nn.Module subclass defined so far."""
    seen, todo = set(), [torch.nn.Module]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return {cls.__name__ for cls in seen}

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

from .plan import PlanError, checked_names, exit_with, load_plan, names_of_root, resolve, wrap

APPLIED_ENV = "GCPROF_PLAN_APPLIED"

_applied = []  # the plan paths applied in this process


def arm_job(path):
    """At start-up with GCPROF_PLAN set: makes this process the job's owner
    (returns True) unless an ancestor already is."""
    marker = os.environ.get(APPLIED_ENV)
    if marker and os.path.exists(marker):
        return False
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
        if not ended_by_exception and not _applied_in_job(path):
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


class PlanOnFirstForward:
    """Applies the plan at the first training forward. A job that trains
    other roots besides the model (CLIP's text tower next to its image
    tower) has their modules named with their class name in front
    ("TextTower.layers.0", module_ranges.py): those names are applied at the
    first training forward of a module of that class outside the model, and
    a name whose root was not called by the model's next training forward
    ends the job as a plan that does not fit does."""

    def __init__(self, torch, path):
        self._torch = torch
        self._path = path
        self._handle = None
        self._model = None
        self._model_modules = set()  # ids of the model's modules
        self._plan = None
        self._pending = {}  # class name of another root -> its names in the plan

    def install(self):
        hooks = self._torch.nn.modules.module
        self._handle = hooks.register_module_forward_pre_hook(self._first_forward)

    def _first_forward(self, module, args):
        if self._handle is None or not self._torch.is_grad_enabled():
            return None
        if self._model is None:
            self._apply_to_model(module)
        elif module is self._model:
            self._done()
            exit_with("%s: %s named in the plan but no module of class %s was called with grad "
                      "before the model's (%s) next training forward; the plan's other roots "
                      "must be trained in the step" % (
                          self._path, ", ".join(n for ns in self._pending.values() for n in ns),
                          " or ".join(self._pending), type(module).__name__))
        elif id(module) not in self._model_modules:
            names = self._pending.pop(type(module).__name__, None)
            if names is not None:
                self._apply(module, names, type(module).__name__)
        if not self._pending:
            self._done()
        return None

    def _done(self):
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def _apply_to_model(self, model):
        self._model = model
        try:
            self._plan = load_plan(self._path)
            names = checked_names(self._plan, self._path)
            known = module_class_names(self._torch)
            for cls in {n.split(".", 1)[0] for n in names} & known:
                mine = names_of_root(names, model, cls)
                if mine:
                    self._pending[cls] = mine
                    names = [n for n in names if n not in mine]
        except PlanError as error:
            exit_with(error)
        if self._pending:
            self._model_modules = {id(m) for m in model.modules()}
        self._apply(model, names, "")
        _applied.append(self._path)
        _note_applied()

    def _apply(self, module, names, prefix):
        try:
            targets = resolve(module, names, self._path, prefix=prefix)
            wrap(targets, self._plan, module)
        except PlanError as error:
            exit_with(error)
        except Exception as exc:
            exit_with("%s: could not apply the plan to %s (%s: %s)"
                      % (self._path, type(module).__name__, type(exc).__name__, exc))
        sys.stderr.write("gcprof: %s: checkpointing %d module%s: %s\n"
                         % (self._path, len(names), "" if len(names) == 1 else "s",
                            ", ".join(names) if names else "(none)"))


def module_class_names(torch):
    """The names of every nn.Module subclass defined so far."""
    seen, todo = set(), [torch.nn.Module]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                todo.append(sub)
    return {cls.__name__ for cls in seen}

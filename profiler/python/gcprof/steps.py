"""Training-step boundaries and the loss of each step.

A step begins at the first root-module forward with grad enabled (the first
of the process, or the first after the previous step ended); evaluation
forwards under no_grad do not open steps. Indices count from 0.

A step ends when an optimizer.step() returns (a global optimizer post hook)
and every optimizer the job holds has stepped since the step began: one
training iteration is one step whatever the number of optimizers and how
often each steps in it. A GAN's loop (D's optimizer, then G's; or G's
first) ends at the second one; a WGAN's (n_critic = 5 critic steps, then
one generator step) at the generator's; a loop that steps G only every
n-th iteration at G's, n iterations per step. The optimizers are those
created (Optimizer.__init__ is wrapped) and still alive. One optimizer (with
gradient accumulation, an LR scheduler, HF Trainer) ends where it always
did; ZeroRedundancyOptimizer (its inner optimizer steps, then the wrapper)
ends at the wrapper. An optimizer that never steps would hold the step
open: when another one steps for the _MAX_STEPS_WAITED-th time in one open
step, the step ends there and those that did not step are not waited for
again (only that first step spans several iterations).

The loss is the last single-element tensor that backward was called on
outside another backward (torch.autograd.backward is patched; Tensor.backward
goes through it). Only a detached alias is kept, and its value is read with
.item() when the step ends, so recording adds at most one device sync per
step and never extends the graph's lifetime. With gradient accumulation the
step's loss is that of its last micro-batch.

A backward that keeps its graph (retain_graph=True, or create_graph) is
reported as the scalar `retain_graph` in its step: the activations it used
stay alive until a later backward (two losses, two backward calls), which
the module ranges do not attribute to the modules, so the advisor refuses
to price a plan for such a job (docs/plan.md).
"""
import functools
import weakref

from . import failsafe, fingerprints

# More critic steps per generator step than any GAN recipe uses (WGAN: 5).
_MAX_STEPS_WAITED = 16


class StepTracker:
    def __init__(self, torch, recorder):
        self._torch = torch
        self._rec = recorder
        self._index = 0
        self._open = False
        self._retained = False  # the open step reported retain_graph
        self._loss = None
        self._in_backward = getattr(torch._C, "_current_graph_task_id", lambda: -1)
        # The model whose buffers are fingerprinted, and the hooks' own cost
        # per module call (module_ranges sets both).
        self.model = lambda: None
        self.hook_cost = lambda: None
        self.op_cost = lambda: None  # record --ops (op_ranges.py)
        self.dispatch_costs = lambda: {}  # record --ops, after the first step (dispatch_costs.py)
        self._at_first_step = []
        self._at_first_step_begun = []
        # The job's optimizers, those found never to step, and how often each
        # stepped in the open step (id -> count).
        self._optimizers = weakref.WeakSet()
        self._never_stepping = weakref.WeakSet()
        self._stepped = {}

    def install(self):
        torch = self._torch
        import torch.optim.optimizer as optim

        if hasattr(optim, "register_optimizer_step_post_hook"):
            handle = optim.register_optimizer_step_post_hook(self._optimizer_stepped)
            failsafe.on_failure(handle.remove)
            _wrap_optimizer_init(optim.Optimizer, self._optimizer_created)
        else:  # PyTorch 1.13: wrap each optimizer class's step once, at its first instance
            _wrap_optimizer_init(optim.Optimizer, self._optimizer_created, self._optimizer_stepped)
        original = torch.autograd.backward
        tracker = self

        @functools.wraps(original)
        def backward(tensors, *args, **kwargs):
            tracker._note_backward(tensors, args, kwargs)
            return original(tensors, *args, **kwargs)

        torch.autograd.backward = backward

        def restore():
            if torch.autograd.backward is backward:
                torch.autograd.backward = original

        failsafe.on_failure(restore)

    def at_first_step(self, fn, begun=False):
        """Calls fn() once, when the first step opens (the model is built and
        wrapped by then: DDP, FSDP); with `begun`, just after it began (what
        fn records belongs to the step)."""
        (self._at_first_step_begun if begun else self._at_first_step).append(fn)

    @property
    def index(self):
        return self._index

    def number_from(self, index):
        """The next step opened is the job's step `index` (attach: the job
        has trained before the first step recorded)."""
        self._index = index

    def optimizers(self):
        return list(self._optimizers)

    def root_forward(self):
        """A root module's forward starts; opens a step when none is open."""
        if not self._torch.is_grad_enabled():
            return
        if self._open:
            return
        self._open = True
        first, self._at_first_step = self._at_first_step, []
        self._run_all(first)
        self._rec.step_begin(self._index)
        begun, self._at_first_step_begun = self._at_first_step_begun, []
        self._run_all(begun)

    @staticmethod
    def _run_all(fns):
        for fn in fns:
            try:
                fn()
            except Exception as exc:
                failsafe.internal_error("a first-step hook", exc)

    def _note_backward(self, tensors, args=(), kwargs=None):
        try:
            if failsafe.failed() or self._in_backward() != -1:
                return  # reentrant checkpoint's inner backward, not a loss
            # torch.autograd.backward(tensors, grad_tensors, retain_graph, create_graph, ...)
            kwargs = kwargs or {}
            retain = kwargs.get("retain_graph", args[1] if len(args) > 1 else None)
            create = kwargs.get("create_graph", args[2] if len(args) > 2 else False)
            if (retain or create) and self._open and not self._retained:
                self._retained = True
                self._rec.scalar("retain_graph", 1.0)
            t = tensors[0] if isinstance(tensors, (tuple, list)) and len(tensors) == 1 else tensors
            if isinstance(t, self._torch.Tensor) and t.numel() == 1:
                self._loss = t.detach()
        except Exception as exc:
            failsafe.internal_error("the backward patch", exc)

    def _optimizer_created(self, optimizer):
        try:
            self._optimizers.add(optimizer)
        except TypeError:  # a subclass with __slots__ and no __weakref__: not waited for
            pass
        except Exception as exc:
            failsafe.internal_error("the optimizer registry", exc)

    def _optimizer_stepped(self, optimizer, args, kwargs):
        if not self._open:
            # No training forward since the step ended: an optimizer stepped
            # outside training (none of the loops we know).
            return
        try:
            steps = self._stepped[id(optimizer)] = self._stepped.get(id(optimizer), 0) + 1
            waiting = [o for o in self._optimizers
                       if id(o) not in self._stepped and o not in self._never_stepping]
            if waiting:
                if steps < _MAX_STEPS_WAITED:
                    return  # another optimizer of this iteration steps later (GAN, WGAN)
                self._never_stepping.update(waiting)
            self._stepped = {}
            self._retained = False
            self._open = False
            loss, self._loss = self._loss, None
            if loss is not None:
                self._rec.scalar("loss", float(loss.item()))
            if fingerprints.scheduled(self._index):
                self._fingerprint(optimizer)
            cost = self.hook_cost()
            if cost is not None:
                self._rec.scalar("hook_ns_per_call", cost)
            cost = self.op_cost()
            if cost is not None:
                self._rec.scalar("op_hook_ns_per_call", cost)
            self._rec.step_end()
            if self._index == 0:
                for name, ns in self.dispatch_costs().items():
                    self._rec.scalar(name, ns)
            self._index += 1
        except Exception as exc:
            failsafe.internal_error("the optimizer step hook", exc)

    def _fingerprint(self, optimizer):
        torch = self._torch
        with torch.no_grad():
            for name, value in (("grad_norm", fingerprints.grad_norm(torch, optimizer)),
                                ("buffer_norm", fingerprints.buffer_norm(torch, self.model()))):
                if value is not None:
                    self._rec.scalar(name, value)


def _wrap_optimizer_init(base, created, stepped=None):
    """Tells `created` of every optimizer made; with `stepped` (PyTorch 1.13,
    no global step hook), also wraps each optimizer class's step once."""
    original_init = base.__init__

    @functools.wraps(original_init)
    def __init__(optimizer, *args, **kwargs):
        original_init(optimizer, *args, **kwargs)
        created(optimizer)
        if stepped is None:
            return
        cls = type(optimizer)
        step = cls.step
        if getattr(step, "_gcprof_step", False):
            return

        @functools.wraps(step)
        def wrapped_step(opt, *a, **k):
            result = step(opt, *a, **k)
            stepped(opt, a, k)
            return result

        wrapped_step._gcprof_step = True
        cls.step = wrapped_step

    base.__init__ = __init__
    failsafe.on_failure(lambda: setattr(base, "__init__", original_init))

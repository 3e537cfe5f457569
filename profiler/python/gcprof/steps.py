"""Training-step boundaries and the loss of each step.

A step begins at the first root-module forward with grad enabled (the first
of the process, or the first after the previous step ended); evaluation
forwards under no_grad do not open steps. Indices count from 0.

A step ends when an optimizer.step() returns (a global optimizer post hook)
and every root module called with grad in the step is done with: one of its
trainable parameters belongs to an optimizer that has stepped in this step,
or it has none. One training iteration is one step even with several
optimizers: in a GAN's loop (D's optimizer steps, then G's) the generator's
forward lies before D's step and its backward after, so the step stays open
at D's step (no G parameter stepped yet) and ends at G's. One optimizer with
gradient accumulation, an LR scheduler (it steps no optimizer) and
ZeroRedundancyOptimizer (its inner optimizer steps a shard, then the wrapper
all parameters) end where they did. A root that no optimizer ever steps
(a frozen teacher left with requires_grad) would hold the step open; when an
optimizer steps twice in one open step the step ends there and such roots
are not waited for again (only the first step then spans two iterations).

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
        self._at_first_step = []
        # The open step's root modules called with grad (id -> weakref), the
        # optimizers that stepped in it, and roots found never to be stepped.
        self._roots = {}
        self._stepped = []
        self._unstepped_roots = set()

    def install(self):
        torch = self._torch
        import torch.optim.optimizer as optim

        if hasattr(optim, "register_optimizer_step_post_hook"):
            handle = optim.register_optimizer_step_post_hook(self._optimizer_stepped)
            failsafe.on_failure(handle.remove)
        else:  # PyTorch 1.13: wrap each optimizer class's step once, at its first instance
            _wrap_optimizer_steps(optim.Optimizer, self._optimizer_stepped)
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

    def at_first_step(self, fn):
        """Calls fn() once, when the first step opens (the model is built and
        wrapped by then: DDP, FSDP)."""
        self._at_first_step.append(fn)

    @property
    def index(self):
        return self._index

    def root_forward(self, module=None):
        """A root module's forward starts; opens a step when none is open."""
        if not self._torch.is_grad_enabled():
            return
        if module is not None and id(module) not in self._roots:
            self._roots[id(module)] = weakref.ref(module)
        if self._open:
            return
        self._open = True
        first, self._at_first_step = self._at_first_step, []
        for fn in first:
            try:
                fn()
            except Exception as exc:
                failsafe.internal_error("a first-step hook", exc)
        self._rec.step_begin(self._index)

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

    def _optimizer_stepped(self, optimizer, args, kwargs):
        if not self._open:
            # No training forward since the step ended: ZeroRedundancyOptimizer's
            # wrapper after its inner optimizer.
            return
        try:
            if any(o() is optimizer for o in self._stepped):
                # A new iteration: a root waited for was never stepped.
                self._unstepped_roots.update(self._waiting_roots())
            else:
                self._stepped.append(weakref.ref(optimizer))
                if self._waiting_roots():
                    return  # another optimizer of this iteration steps later (GAN)
            self._roots, self._stepped = {}, []
            self._retained = False
            self._open = False
            loss, self._loss = self._loss, None
            if loss is not None:
                self._rec.scalar("loss", float(loss.item()))
            self._fingerprint(optimizer)
            cost = self.hook_cost()
            if cost is not None:
                self._rec.scalar("hook_ns_per_call", cost)
            cost = self.op_cost()
            if cost is not None:
                self._rec.scalar("op_hook_ns_per_call", cost)
            self._rec.step_end()
            self._index += 1
        except Exception as exc:
            failsafe.internal_error("the optimizer step hook", exc)


    def _waiting_roots(self):
        """Ids of the step's roots with trainable parameters of which no
        optimizer that stepped in this step holds one."""
        stepped = set()
        for ref in self._stepped:
            optimizer = ref()
            if optimizer is not None:
                stepped.update(id(p) for g in optimizer.param_groups for p in g["params"])
        waiting = []
        for key, ref in self._roots.items():
            module = ref()
            if module is None or key in self._unstepped_roots:
                continue
            trainable = [id(p) for p in module.parameters() if p.requires_grad]
            if trainable and not stepped.intersection(trainable):
                waiting.append(key)
        return waiting

    def _fingerprint(self, optimizer):
        torch = self._torch
        with torch.no_grad():
            for name, value in (("grad_norm", fingerprints.grad_norm(torch, optimizer)),
                                ("buffer_norm", fingerprints.buffer_norm(torch, self.model()))):
                if value is not None:
                    self._rec.scalar(name, value)


def _wrap_optimizer_steps(base, stepped):
    original_init = base.__init__

    @functools.wraps(original_init)
    def __init__(optimizer, *args, **kwargs):
        original_init(optimizer, *args, **kwargs)
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

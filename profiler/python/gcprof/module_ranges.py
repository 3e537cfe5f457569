"""Forward ranges per module call, named by qualified module name.

Two global module hooks (forward pre-hook and forward hook) see every module
call of the process. A call made while no other module forward is active on
the thread is a *root* call: it may open a training step (steps.py) and its
subtree is named (tree_names.py); modules outside any walked tree are not
recorded. Per call the pre-hook captures the inputs' grad_fn and version
counters (before an in-place forward rebinds them); the post-hook reports
input/output bytes, ends the range and arms the module's backward range
(backward_ranges.py). What each call leaves in the trace (the `recompute
<name>`, `inplace <name>`, `inplace output 0x<address>` and `torch.compile
<class>` ranges, the hooks' own cost `hook_ns_per_call`): docs/python-shim.md.

With the C++ extension loaded (native_hooks.py) the common call is done in
C++ (profiler/backward_hooks/forward_hooks.cpp), which calls back into
_native_root below for a root call's naming and step, and into
_native_pre/_native_post/_note_inplace only for calls during a backward
pass, arguments it does not walk, root calls in the operator mode and a
module's first in-place call; while they are the only module hooks, module_call.py's
Module.__call__ calls the C++ pair directly. Both paths record the same
events (tests/python/test_native_hooks.py).
"""
import contextlib
import sys
import threading
from time import perf_counter_ns as _clock

from . import compile_budget, failsafe, module_call, native_hooks
from .runtime import checkpointing
from .backward_ranges import BackwardRanges
from .native import FORWARD, USER
from .tree_names import TreeNames
from .tensors import grad_nodes, storage_address, tensor_bytes

_SKIP = None  # stack entry of a call that is not recorded
_A_CALLER = ({},)  # `callers` of a C++ stack frame that has a recorded caller (arm)
COMPILED_MARK = "torch.compile"  # + " <class>"; read by the advisor (docs/python-shim.md)
INPLACE_OUTPUT = "inplace output "  # + "0x<address>"; read by the advisor (docs/python-shim.md)


class _Frame:
    __slots__ = ("name", "range_id", "input_nodes", "recompute", "nodes", "versions", "ops")

    def __init__(self, name, range_id, input_nodes, recompute=False, versions=()):
        self.name = name
        self.ops = False  # this root call entered the operator mode (op_ranges.py)
        self.versions = versions
        self.range_id = range_id
        self.input_nodes = input_nodes
        self.recompute = recompute
        # Backward dispatchers of nodes met inside this call, id(node) -> (node, hooks):
        # callers find their callees' so that one node has one pre-hook (nesting order).
        self.nodes = {}


class ModuleRanges:
    def __init__(self, torch, recorder, steps, attached=False):
        self._torch = torch
        self._tensor = torch.Tensor
        self._grad_enabled = torch.is_grad_enabled
        self._rec = recorder
        self._range_start = recorder.range_start
        self._steps = steps
        # The C++ hooks when built for this torch, else the python ones (native_hooks.py).
        self._backward = native_hooks.load(torch, recorder) or BackwardRanges(torch, recorder)
        # The C++ forward hooks (forward_hooks.cpp) when the extension has them; install().
        self._native = getattr(self._backward, "forward_hooks", None)
        self._tls = threading.local()
        data = getattr(getattr(torch, "utils", None), "data", None)
        self._worker_info = getattr(data, "get_worker_info", None) or (lambda: None)
        self._tree = TreeNames(self._grad_enabled, getattr(self._native, "same_tree", None))
        self._names = self._tree.names  # id(module) -> qualified name, as of the last root call
        self._inplace = set()     # names already reported as in-place
        self._hook_ns = 0         # time inside _pre and _post since take_hook_cost()
        self._hook_calls = 0
        self._recording = True    # refreshed at each root call
        self._compiled_marked = False
        # -1 outside a backward pass (a builtin: no python call per module call).
        backward = self._backward
        self._graph_task = getattr(torch._C, "_current_graph_task_id",
                                   lambda: 0 if backward.in_backward() else -1)
        compiler = getattr(torch, "compiler", None)
        self._compiling = getattr(compiler, "is_compiling", lambda: False)
        self.ops = None  # OpRanges when `record --ops` (startup.py)
        # attach: a thread may be inside a module call begun before the hooks
        # were in; until a thread's first whole root call, a call that looks
        # like a root there is checked (_begun_before_the_hooks).
        self._call_impl = getattr(torch.nn.Module._call_impl, "__code__", None) if attached \
            else None
        self._direct_call = None  # module_call.py's Module.__call__ (its code) once installed

    def install(self):
        hooks = self._torch.nn.modules.module
        pre_hook, post_hook = self._pre, self._post
        native = self._native
        if native is not None:
            tensor = self._tensor
            native.forward_install(self, lambda v: tensor_bytes(v, tensor),
                                   lambda v: grad_nodes(v, tensor))
            failsafe.on_failure(native.forward_disable)
            native.tree_install(self._torch.nn.Module.named_modules)
            self._native_pre_hook, self._native_post_hook = native.forward_pre, native.forward_post
            pre_hook, post_hook = self._pre_in_cpp, self._post_in_cpp
        try:
            post = hooks.register_module_forward_hook(post_hook, with_kwargs=True, always_call=True)
            pre = hooks.register_module_forward_pre_hook(pre_hook)
        except TypeError:  # PyTorch 1.13: no kwargs, not called when forward raises
            if native is not None:  # never built for it (native_hooks.py); stays correct anyway
                native.forward_disable()
                self._native = self._tree.same_tree = None
            post = hooks.register_module_forward_hook(self._post)
            pre = hooks.register_module_forward_pre_hook(self._pre_without_always_call)
        failsafe.on_failure(pre.remove)
        failsafe.on_failure(post.remove)
        if self._native is not None:  # last in, first out: gone before the hooks it stands for
            self._direct_call = module_call.install(self._torch, self._native_pre_hook,
                                                    self._native_post_hook, native)
        checkpointing.recompute_context = self.recompute
        failsafe.on_failure(lambda: setattr(checkpointing, "recompute_context", None))
        # One native call ends a forward (range_io + range_end) when the recorder can.
        end_io = getattr(self._rec, "range_end_io", None)
        self._end_io = end_io or self._end_io_in_two_calls

    def _end_io_in_two_calls(self, range_id, input_bytes, output_bytes):
        self._rec.range_io(range_id, input_bytes, output_bytes)
        self._rec.range_end(range_id)

    def _stack(self):
        tls = self._tls
        try:
            return tls.stack
        except AttributeError:
            tls.stack = []
            # The node dicts (_Frame.nodes) of the recorded calls on the stack,
            # innermost last: where arm() looks for a node's dispatcher.
            tls.scopes = []
            tls.recomputing = 0
            return tls.stack

    @contextlib.contextmanager
    def recompute(self, name):
        """Marks a checkpoint's recomputation of `name` (checkpointing.py)."""
        self._stack()
        rid = self._rec.range_start("recompute " + name, USER) if self._recording else 0
        self._tls.recomputing += 1
        try:
            yield
        finally:
            self._tls.recomputing -= 1
            self._rec.range_end(rid)

    def take_hook_cost(self):
        """Mean ns of hook time per module call since the last call; None without calls."""
        if self._native is not None:
            return self._native.take_hook_cost()
        ns, calls = self._hook_ns, self._hook_calls
        self._hook_ns = self._hook_calls = 0
        return ns / calls if calls else None

    # The two hooks below run on every module call of the process: they are
    # written for the common case (one tensor in, one out) with few python
    # calls; bench/record/hook_cost.py measures them (bench/RESULTS.md).

    def _pre(self, module, args):
        if self._compiling():
            return None
        start = _clock()
        try:
            try:
                stack = self._tls.stack
            except AttributeError:
                stack = self._stack()
            if self._graph_task() != -1:
                frame = self._open_in_backward(module)
            else:
                frame = self._open(module, args, not stack)
            stack.append(frame)
            if frame is not _SKIP and not frame.recompute:
                self._tls.scopes.append(frame.nodes)
        except Exception as exc:
            failsafe.internal_error("the module forward pre-hook", exc)
        self._hook_calls += 1
        self._hook_ns += _clock() - start
        return None

    def _pre_without_always_call(self, module, args):
        # Without always_call (PyTorch 1.13) a call whose forward raised never
        # reaches _post: its frames stay on the stack and every later call
        # would nest inside them (no root call, no step). The model is never
        # called inside itself, so frames left when it is called are stale.
        stack = getattr(self._tls, "stack", None)
        if stack and module is self._tree.primary():
            try:
                self._close_stale(stack)
            except Exception as exc:
                failsafe.internal_error("closing the ranges of a forward that raised", exc)
        return self._pre(module, args)

    def _close_stale(self, stack):
        while stack:
            frame = stack.pop()
            if frame is _SKIP:
                continue
            if frame.recompute:
                self._tls.recomputing -= 1
            else:
                self._tls.scopes.pop()
                if frame.ops:
                    self.ops.end()
            self._rec.range_end(frame.range_id)

    # The C++ hooks (forward_hooks.cpp) behind two thin python functions: a
    # python function can see torch.compile tracing it (the C function would
    # break the graph at every module call) and catch what goes wrong.

    def _pre_in_cpp(self, module, args):
        if self._compiling():
            return None
        try:
            self._native_pre_hook(module, args)
        except Exception as exc:
            failsafe.internal_error("the module forward pre-hook", exc)
        return None

    def _post_in_cpp(self, module, args, *rest):  # rest: kwargs, output; or output
        if self._compiling():
            return None
        try:
            self._native_post_hook(module, args, *rest)
        except Exception as exc:
            failsafe.internal_error("the module forward hook", exc)
        return None

    def _native_pre(self, module, args, root):
        """The calls the C++ pre-hook leaves to python: its _Frame, or None (not recorded).
        root: 0, 1, or 2 for a root call made by module_call.cpp (no frame of its own)."""
        self._stack()
        if self._graph_task() != -1:
            return self._open_in_backward(module)
        return self._open(module, args, root)

    def _native_root(self, module, root):
        """A root call's python part, for the C++ pre-hook: the tree named, the
        step opened. True: C++ records the call itself; None: not recorded;
        False: nothing done, _native_pre takes the whole call (the operator
        mode). root: 1, or 2 for a call made by module_call.cpp."""
        if self.ops is not None:
            return False
        return True if self._enter_root(module, root) else _SKIP

    def _native_post(self, frame, args, kwargs, output, has_caller):
        """The end of a call _native_pre opened (the C++ post-hook popped its frame)."""
        self._finish(frame, args, kwargs, output, _A_CALLER if has_caller else ())

    def _open_in_backward(self, module):
        if self._tls.recomputing or not self._recording:
            return _SKIP
        name = self._names.get(id(module))
        rid = self._rec.range_start("recompute " + name, USER) if name is not None else 0
        self._tls.recomputing += 1
        return _Frame(name, rid, None, recompute=True)

    def _open(self, module, args, root):
        if root and not self._enter_root(module, root):
            return _SKIP
        name = self._names.get(id(module)) if self._recording else None
        if name is None:
            return _SKIP
        rid = self._range_start(name, FORWARD)
        if not self._grad_enabled():
            frame = _Frame(name, rid, None)
        elif len(args) == 1 and type(args[0]) is self._tensor:
            arg = args[0]
            node = arg.grad_fn
            frame = _Frame(name, rid, [node] if node is not None else [],
                           versions=((arg, arg._version),))
        else:
            tensor = self._tensor
            frame = _Frame(name, rid, grad_nodes(args, tensor),
                           versions=[(a, a._version) for a in args if isinstance(a, tensor)])
        if root and self.ops is not None and frame.input_nodes is not None:
            frame.ops = True
            self.ops.begin()
        return frame

    def _enter_root(self, module, root):
        """A root call's own part (root: 1, or 2 for a call made by
        module_call.cpp); False for the rest of a forward the hooks never saw
        begin (attach), which is not recorded."""
        if self._call_impl is not None and self._begun_before_the_hooks(root == 2):
            return False
        self._root_call(module)
        return True

    def _begun_before_the_hooks(self, frameless=False):
        """attach: True when this thread's call that looks like a root is
        nested in a module call begun before the hooks were in (its own call
        frame is the only one a real root call has: torch's _call_impl, or
        module_call.py's __call__ with the _call_impl it may hand over to;
        none when module_call.cpp made the call: `frameless`)."""
        tls = self._tls
        if getattr(tls, "whole", False):
            return False  # every call on this thread since passed the hooks
        code, direct, calls = self._call_impl, self._direct_call, 0
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is direct:
                calls += 1
            elif frame.f_code is code:
                caller = frame.f_back
                calls += caller is None or caller.f_code is not direct
            frame = frame.f_back
        tls.whole = calls <= (0 if frameless else 1)
        return not tls.whole

    def primary(self):
        """The model: the first root module called (None before, or once it is gone)."""
        return self._tree.primary()

    def _note_inplace(self, name, output):
        if name not in self._inplace:
            self._inplace.add(name)
            self._rec.scalar("inplace " + name, 1.0)
        # Which allocation this call returns: a checkpointed unit ending in this
        # call hands it to the next unit, so the replay keeps it. Its
        # storage's address names it in the allocation trace exactly; the range
        # nests in this call's range (its parent) and is closed at once.
        address = storage_address(output, self._torch.Tensor)
        if address:
            self._rec.range_end(self._rec.range_start("%s%#x" % (INPLACE_OUTPUT, address), USER))

    def _root_call(self, module):
        if self._worker_info() is not None:
            # A DataLoader worker calling a transform (torchvision's are
            # modules) is not training: no step, no range, so no run of its
            # own that advise or verify could take for the job's, as a
            # forked worker records nothing (docs/recording.md).
            self._recording = False
            if self._native is not None:
                self._native.set_names(None, False)
            return
        renamed = self._tree.name_tree(module)
        self._names = self._tree.names
        self._steps.root_forward()
        self._recording = self._rec.active()
        if self._native is not None:
            self._native.set_names(self._names if renamed else None, self._recording)
        inner = getattr(module, "_orig_mod", None)
        if inner is not None and not compile_budget.compiling(self._torch):
            inner = None  # TORCH_COMPILE_DISABLE=1: an eager model, whose modules the hooks see
        if inner is not None:
            compile_budget.apply(self._torch)  # over the job's own value, before Inductor compiles
        if inner is not None and self._recording and not self._compiled_marked:
            self._compiled_marked = True
            mark = self._rec.range_start(f"{COMPILED_MARK} {type(inner).__name__}", USER)
            self._rec.range_end(mark)
            self._rec.scalar(compile_budget.SCALAR, compile_budget.in_force(self._torch))

    def _post(self, module, args, *rest):
        if self._compiling():
            return None
        start = _clock()
        try:
            try:
                stack = self._tls.stack
            except AttributeError:
                stack = self._stack()
            if stack:
                frame = stack.pop()
                if frame is not _SKIP:
                    self._leave(frame, args, rest)
        except Exception as exc:
            failsafe.internal_error("the module forward hook", exc)
        self._hook_ns += _clock() - start
        return None

    def _leave(self, frame, args, rest):
        scopes = self._tls.scopes
        if not frame.recompute:
            scopes.pop()
        kwargs, output = rest if len(rest) == 2 else (None, rest[0])
        self._finish(frame, args, kwargs, output, scopes)

    def _finish(self, frame, args, kwargs, output, scopes):
        """Ends a call's range and arms its backward; `scopes`: the recorded callers'
        node dicts, innermost last (only their presence counts on the C++ path)."""
        if frame.recompute:
            self._tls.recomputing -= 1
            self._rec.range_end(frame.range_id)
            return
        if frame.ops:
            self.ops.end()
        for t, version in frame.versions:
            if t._version != version:
                self._note_inplace(frame.name, output)
                break
        frame.versions = ()  # hold no tensor past the call
        tensor = self._tensor
        if len(args) == 1 and type(args[0]) is tensor and not kwargs:
            arg = args[0]
            in_bytes = arg.numel() * arg.element_size()
        else:
            seen = set()  # each tensor once (tensors.tensor_bytes)
            in_bytes = tensor_bytes(args, tensor, seen)
            if kwargs:
                in_bytes += tensor_bytes(kwargs, tensor, seen)
        if type(output) is tensor:
            self._end_io(frame.range_id, in_bytes, output.numel() * output.element_size())
            node = output.grad_fn
            outputs = [node] if node is not None else None
        else:
            self._end_io(frame.range_id, in_bytes, tensor_bytes(output, tensor))
            outputs = grad_nodes(output, tensor) if output is not None else None
        if not outputs or frame.input_nodes is None or not self._grad_enabled():
            return
        inputs = frame.input_nodes
        if not inputs and kwargs:
            # Global pre-hooks do not see kwargs; read their nodes now (only an in-place
            # forward on a keyword tensor would have rebound them meanwhile).
            inputs = [n for n in grad_nodes(kwargs, tensor) if id(n) not in {id(o) for o in outputs}]
        own = frame.nodes
        self._backward.arm(frame.name, outputs, inputs, own, scopes)
        if scopes and own:
            # Only this call's inputs and outputs can meet the caller's modules again;
            # they are alive in the caller anyway, so holding their nodes changes nothing.
            caller = scopes[-1]
            for node in outputs + inputs:
                key = id(node)
                entry = own.get(key)
                if entry is not None and key not in caller:
                    caller[key] = entry

"""Module calls that reach gcprof's C++ hooks without torch's hook dispatch.

As soon as any global module hook is registered, torch's Module._call_impl
takes its slow path for every module call (an inner closure, walks of eight
hook dicts, an always-called set, the is_compiling() checks of both our
hook wrappers): on short steps about half of what recording costs per module
call (bench/RESULTS.md). While gcprof's forward pre-hook and forward hook
are the only hooks that would run for a call, the Module.__call__ installed
here calls the C++ hooks (forward_hooks.cpp) directly around forward, as
torch would call the registered ones: the same arguments, the post-hook also
when forward raises (always_call), an error inside them ends profiling
(failsafe.py) and never reaches the job.

Every other case runs torch's own code, which calls gcprof's registered
hooks as before: another global hook (the job's, or a second profiler), a
module with hooks of its own (FSDP, accelerate, the job's), a JIT trace, a
compiled call (`module.compile()`), and torch.compile tracing: is_compiling()
is the first test, so Dynamo sees torch's __call__ and nothing of ours.

With the extension's module_call (module_call.cpp) the same function runs in
C, without a python frame: what is installed is a C object whose descriptor
gives this python __call__ (so introspection and super().__call__ see it;
while torch.compile compiles it gives torch's own, as Dynamo guards on the
class's __dict__ entry), and which calls it whenever a call is not the
common case. Code that
saves Module.__call__ and sets it back (FX's tracer) puts this function
there: its next plain call installs the C version again.

Removing it (failsafe.remove_all on detach or after an internal error) puts
back the very function that was there; it is installed only over torch's
own (another library's replacement is left alone, hooks then run through it).
"""
from . import failsafe


def install(torch, pre, post, native=None):
    """Installs the direct call around the C++ hooks `pre` and `post` (the
    functions gcprof registered wrappers of), in C when `native` (the
    extension) has module_call; returns the python function's code object (the
    frames of calls made through it, module_ranges.py's attach check), or
    None when torch's __call__ is not the one this was written for."""
    module_class = torch.nn.Module
    torch_call = module_class.__dict__.get("__call__")
    if getattr(torch_call, "__name__", None) != "_wrapped_call_impl":
        return None
    registry = torch.nn.modules.module
    pre_hooks, post_hooks = registry._global_forward_pre_hooks, registry._global_forward_hooks
    backward_pre_hooks = registry._global_backward_pre_hooks
    backward_hooks = registry._global_backward_hooks
    is_tracing = torch._C._is_tracing
    is_compiling = torch.compiler.is_compiling
    on = [True]
    error = failsafe.internal_error
    class_dict = module_class.__dict__  # a live view
    in_c = [None]  # the C version once installed

    def __call__(self, *args, **kwargs):
        if is_compiling():
            return torch_call(self, *args, **kwargs)
        if (not on or self._compiled_call_impl is not None or is_tracing()
                or self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                or self._forward_pre_hooks or backward_pre_hooks or backward_hooks
                or len(pre_hooks) != 1 or len(post_hooks) != 1):
            # torch's own dispatch, without its _wrapped_call_impl frame (done above).
            compiled = self._compiled_call_impl
            if compiled is not None:
                return compiled(*args, **kwargs)
            return self._call_impl(*args, **kwargs)
        if in_c[0] is not None and class_dict.get("__call__") is __call__:
            # Code that saved Module.__call__ (its descriptor gives this function)
            # and put it back, as FX's tracer does: the C version again.
            module_class.__call__ = in_c[0]
        forward = self.forward
        try:
            pre(self, args)
        except Exception as exc:
            error("the module forward pre-hook", exc)
        try:
            result = forward(*args, **kwargs)
        except Exception:
            try:  # as torch calls an always_call hook when forward raised
                post(self, args, None)
            except Exception as exc:
                error("the module forward hook", exc)
            raise
        try:
            post(self, args, kwargs, result)
        except Exception as exc:
            error("the module forward hook", exc)
        return result

    __call__.__qualname__ = "Module.__call__"
    installed = __call__
    make = getattr(native, "module_call", None)
    if make is not None:
        installed = in_c[0] = make(__call__, on, error, vars(torch.compiler),
                                   (pre_hooks, post_hooks, backward_pre_hooks, backward_hooks),
                                   torch_call)

    def remove():
        on.clear()
        if class_dict.get("__call__") in (installed, __call__):
            module_class.__call__ = torch_call

    module_class.__call__ = installed
    failsafe.on_failure(remove)
    return __call__.__code__

"""The shim's side of `gcprof attach`: run inside a job that is already training.

The injector's attach thread (profiler/inject/attach/session.cpp) calls
try_start() under the GIL until it returns READY, then detach() when the
session ends. Nothing here runs at import time.

The hooks are those `gcprof record` installs (startup.install_hooks). A
forward that began before them is not recorded: its next module call would
look like a root and take the model's names (module_ranges.py skips it). The
first step recorded begins at the next whole training forward. Optimizers
made before attach are found on the heap, so that a step still waits for
every optimizer of the job (steps.py).

Memory that existed before attach (parameters, gradients, optimizer state,
the python heap, torch's own) never passed through the hooks. On the host the
injector finds it by walking malloc's heaps (profiler/inject/heap_walk.h)
and records each block as allocated at attach, at its address, so its later
free is matched and the trace's peaks stay absolute. On a GPU, PyTorch's
caching allocator is observed from attach on and its own snapshot is the
device baseline (device_baseline.py); without it, each live CUDA tensor
storage is reported once here instead.
"""
import ctypes
import gc
import sys

from . import device_baseline, failsafe

READY, BUSY, NO_TORCH = 0, 1, 2

_attached = None  # the recorder while attached


def try_start(injector_path, backend="auto"):
    """READY once the hooks are in; BUSY while a thread is inside a module call
    or a backward. `backend` is `gcprof attach --backend`: host leaves device
    memory alone."""
    global _attached
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "nn"):
        return NO_TORCH
    if _attached is not None:
        return READY
    # Imported before the checks below: an import reads files, which lets
    # the job's threads run.
    from . import native, startup
    # PyDLL, not CDLL: a CDLL call releases the GIL at once. Python still
    # lets the job's threads run between any two bytecodes here (every few
    # ms, and at each import or file read): a forward may begin after this
    # check, and a step may open in the middle of install_hooks. So the
    # check only spares a retry; the module hooks themselves skip a call
    # nested in one begun before them (module_ranges.py), and what the
    # first step needs is set up before any module hook is in (_prepare_steps).
    lib = ctypes.PyDLL(injector_path)  # loaded already: the same handle
    cuda = backend != "host" and _cuda_in_use(torch)
    # Not inside a backward either: the engine replaces and frees tensors
    # (a parameter's first .grad) without the GIL, and the baseline's walk
    # reading a .grad or a storage then races it (a use after free).
    if _inside(_module_call_codes(torch) | _backward_codes(torch)):
        return BUSY
    recorder = native.InjectorRecorder(lib)
    # Before any hook: no step can begin before the baseline is in, so the
    # blocks it reports all come before the first step. (The allocator hooks
    # are in already: a reported block freed later is matched.)
    on_device = cuda and device_baseline.observe(torch, recorder, lib)
    if not on_device and _cuda_in_use(torch):
        _report_device_tensors(torch, lib)
    try:
        startup.install_hooks(torch, recorder,
                              attaching=lambda steps: _prepare_steps(torch, steps, recorder))
    except Exception:
        failsafe.remove_all()
        raise
    _attached = recorder
    return READY


def detach():
    """Removes every hook try_start installed; the job runs on as before."""
    global _attached
    failsafe.remove_all()
    _attached = None
    return 0


def _cuda_in_use(torch):
    cuda = getattr(torch, "cuda", None)
    return cuda is not None and cuda.is_available() and cuda.is_initialized()


def _module_call_codes(torch):
    module = torch.nn.Module
    return {getattr(module, name).__code__ for name in ("_call_impl", "_wrapped_call_impl")
            if hasattr(getattr(module, name, None), "__code__")}


def _backward_codes(torch):
    """The python frames below every backward: loss.backward() and
    torch.autograd.backward / grad all run the engine from these two."""
    autograd = getattr(torch, "autograd", None)
    functions = (getattr(autograd, "backward", None), getattr(autograd, "grad", None))
    return {f.__code__ for f in functions if hasattr(f, "__code__")}


def _inside(codes):
    """True while any thread runs one of these functions."""
    for frame in sys._current_frames().values():
        while frame is not None:
            if frame.f_code in codes:
                return True
            frame = frame.f_back
    return False


def _prepare_steps(torch, steps, recorder):
    """What the first step needs, in place before a module hook can open it."""
    _adopt_optimizers(torch, steps)
    steps.at_first_step(lambda: _number_steps_as_the_job(steps, recorder))


def _adopt_optimizers(torch, steps):
    optimizer = torch.optim.Optimizer
    # type(), not isinstance(): a lazy module attribute on the heap (torch's
    # deprecated aliases) would print a warning into the job's stderr.
    for obj in gc.get_objects():
        if issubclass(type(obj), optimizer):
            steps._optimizer_created(obj)


def _job_step(optimizers):
    """The optimizer steps the job has taken, from its optimizers' own
    counters (state["step"] of Adam, AdamW, RMSprop, ...); None when no
    optimizer keeps one (SGD)."""
    counts = []
    for opt in optimizers:
        for state in getattr(opt, "state", {}).values():
            step = state.get("step") if isinstance(state, dict) else None
            if step is not None:
                counts.append(int(step.item() if hasattr(step, "item") else step))
                break
    return max(counts) if counts else None


def _number_steps_as_the_job(steps, recorder):
    """Steps are stored under the job's own step numbers, as a LibTorch job's
    C API steps are: `verify` pairs an attached run's losses with those of
    the job re-run from its start by that number (the injector records it
    as the scalar `attach_step`). When the job keeps no count, steps count
    from attach and the scalar `attach_step_unknown` says so."""
    job_step = _job_step(steps.optimizers())
    if job_step is None:
        steps.at_first_step(lambda: recorder.scalar("attach_step_unknown", 1.0), begun=True)
    else:
        steps.number_from(job_step)


def _live_tensors(torch):
    tensor = torch.Tensor
    for obj in gc.get_objects():
        if issubclass(type(obj), tensor):
            yield obj
            grad = obj.grad if obj.requires_grad and obj.is_leaf else None
            if grad is not None:
                yield grad


def _report_device_tensors(torch, lib):
    """CUDA tensors' storages live at attach (host ones are in the injector's
    heap walk)."""
    baseline = lib.gcprof_attach_baseline
    baseline.restype = None
    baseline.argtypes = [ctypes.c_uint64, ctypes.c_int64, ctypes.c_int]
    seen = set()
    for t in _live_tensors(torch):
        try:
            if t.device.type != "cuda" or t.is_sparse:
                continue
            storage = t.untyped_storage()
            address, size = storage.data_ptr(), storage.nbytes()
        except Exception:  # tensor subclasses without storage (functional, fake)
            continue
        if not address or address in seen:
            continue
        seen.add(address)
        baseline(address, size, t.device.index if t.device.index is not None else 0)

"""PyTorch's own CUDA caching allocator, observed instead of replaced.

libgcprof_allocator_trace.so (profiler/allocator_trace) attaches a c10 trace
tracker that reports every tensor allocation and free and every segment
event to the injector (docs/cuda.md, "Native allocator"). The job's
PYTORCH_CUDA_ALLOC_CONF is left as it is.

c10 hands the tracker only to device allocators that exist, and CUDA creates
them lazily: the attach is queued with torch.cuda._lazy_call, which runs it
right away when CUDA is initialised and otherwise right after
torch._C._cuda_init(), before any CUDA memory is allocated. A job that never
touches CUDA never runs it. The call never raises: an exception there would
fail the job's CUDA initialisation (DeferredCudaCallError).

The library is built against one torch (the sidecar .abi names its version)
and is loaded only when the job's torch is that one. Where it is:
GCPROF_ALLOCATOR_TRACE_LIB (tests), else beside the preloaded injector.
GCPROF_ALLOCATOR_TRACE=0 turns it off.
"""
import ctypes
import os
import sys

LIBRARY = "libgcprof_allocator_trace.so"
ABI_FILE = "libgcprof_allocator_trace.abi"


class Attacher:
    """The queued call: attaches once CUDA is up; remembers the outcome."""

    def __init__(self, attach):
        self._attach = attach
        self.attached = False
        self.calls = 0

    def __call__(self):
        self.calls += 1
        try:
            self.attached = bool(self._attach(1))
        except Exception:  # never fail the job's CUDA initialisation
            self.attached = False


def install(torch, recorder):
    """Queues the attach; returns the Attacher, or None with the reason on stderr."""
    if os.environ.get("GCPROF_ALLOCATOR_TRACE") == "0":
        return None
    if not getattr(getattr(torch, "version", None), "cuda", None) or not hasattr(torch, "cuda"):
        return None  # a CPU-only torch has no CUDA allocator to observe
    if "cudaMallocAsync" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""):
        return None  # every tensor is a cudaMallocAsync the CUDA backend records
    path = os.environ.get("GCPROF_ALLOCATOR_TRACE_LIB") or _beside_injector(recorder)
    if not path:
        return None  # a test recorder: no injector to report to
    if not os.path.exists(path):
        return _skip("no %s beside the injector (built without LibTorch's CUDA headers)" % LIBRARY)
    why = _abi_mismatch(torch, path)
    if why:
        return _skip(why)
    try:
        lib = ctypes.CDLL(path)
        attach = lib.gcprof_attach_allocator_trace
        attach.argtypes = [ctypes.c_int]
        attach.restype = ctypes.c_int
    except (OSError, AttributeError) as exc:
        return _skip("%s: %s" % (path, exc))
    attacher = Attacher(attach)
    torch.cuda._lazy_call(attacher)
    return attacher


def _abi_mismatch(torch, path):
    abi_path = os.path.join(os.path.dirname(path), ABI_FILE)
    try:
        with open(abi_path) as f:
            built_for = f.read().strip()
    except OSError as exc:
        return "cannot read %s (%s)" % (abi_path, exc.strerror)
    version = built_for.partition(" ")[2]
    job = str(torch.__version__).split("+")[0]
    if not version or job != version:
        return "%s was built for %s, this job has torch %s" % (path, built_for, torch.__version__)
    return None


def _beside_injector(recorder):
    where = getattr(recorder, "injector_path", None)
    injector = where() if where is not None else None
    return os.path.join(os.path.dirname(injector), LIBRARY) if injector else None


def _skip(why):
    try:
        sys.stderr.write("gcprof: PyTorch's CUDA allocator not observed (device memory from the "
                         "CUDA backend only): %s\n" % why)
        sys.stderr.flush()
    except Exception:
        pass
    return None

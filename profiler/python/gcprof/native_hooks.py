"""The backward ranges in C++ when this job's torch is the one they were built for.

profiler/backward_hooks (gcprof_backward_hooks.so, a CPython extension) does
what backward_ranges.py does with C++ autograd hooks: no python pre-hook, no
RemovableHandle per node and no GIL in the backward pass (docs/python-shim.md,
"Backward ranges in C++"). It is built against one torch and one python; the
file gcprof_backward_hooks.abi beside it names them, and it is imported only
when they are the job's (a mismatched extension could crash the job instead of
failing to import). Otherwise, or with GCPROF_NATIVE_HOOKS=0, or when the
recorder has no native entry points (a test recorder without them), the
python path runs; a mismatch, a failed import or an installation built
without the extension says so once on stderr.

Where it is: GCPROF_NATIVE_HOOKS_LIB (tests), else beside the injector that
this process preloaded (the build's lib/ or the installed libdir).
"""
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig

from . import failsafe

LIBRARY = "gcprof_backward_hooks.so"
ABI_FILE = "gcprof_backward_hooks.abi"
_MODULE = "gcprof_backward_hooks"


def abi_of_this_job(torch):
    """What gcprof_backward_hooks.abi must say (profiler/backward_hooks/CMakeLists.txt)."""
    soabi = sysconfig.get_config_var("SOABI") or sys.version.split()[0]
    return "torch %s python %s" % (torch.__version__, soabi)


class NativeBackwardRanges:
    """BackwardRanges' interface over the extension (module_ranges.py calls arm)."""

    native = True

    def __init__(self, module):
        self.module = module
        self._arm = module.arm
        # The forward hooks in C++ (forward_hooks.cpp, module_ranges.py) when the
        # recorder gave an entry point ending a range with its io; else None.
        supported = getattr(module, "forward_supported", None)
        forward_off = os.environ.get("GCPROF_NATIVE_FORWARD") == "0"
        self.forward_hooks = module if supported and supported() and not forward_off else None

    def in_backward(self):
        return False  # only asked on PyTorch without _current_graph_task_id, never native

    def arm(self, name, output_nodes, input_nodes, own, callers):
        # Dispatchers live on the nodes (found there again), so `own` stays empty;
        # a root call (no recorded caller) ends the sharing of dispatchers.
        self._arm(name, output_nodes, input_nodes, not callers)


def load(torch, recorder):
    """A NativeBackwardRanges for this process, or None (the python path runs)."""
    if os.environ.get("GCPROF_NATIVE_HOOKS") == "0":
        return None
    entry_points = getattr(recorder, "native_entry_points", None)
    if entry_points is None:
        return None
    path = os.environ.get("GCPROF_NATIVE_HOOKS_LIB") or _beside_injector(recorder)
    if not path:
        return None
    if not os.path.exists(path):
        # Built without them: torch (or Python.h) was not found at build
        # time, as in `pip install .` with build isolation, which hides the
        # torch the jobs import. Said once per process that records.
        return _fallback(NOT_INSTALLED % (LIBRARY, os.path.dirname(path)))
    abi_path = os.path.join(os.path.dirname(path), ABI_FILE)
    try:
        with open(abi_path) as f:
            built_for = f.read().strip()
    except OSError as exc:
        return _fallback("cannot read %s (%s)" % (abi_path, exc.strerror))
    here = abi_of_this_job(torch)
    if built_for != here:
        return _fallback("%s was built for %s, this job has %s" % (path, built_for, here))
    try:
        module = _import(path)
        module.install(*entry_points())
    except Exception as exc:
        return _fallback("%s: %s: %s" % (path, type(exc).__name__, exc))
    failsafe.on_failure(module.disable)
    return NativeBackwardRanges(module)


NOT_INSTALLED = ("the C++ recording hooks are not installed (no %s in %s: this gcprof was built "
                 "where torch was not importable, e.g. `pip install .` with pip's build isolation); "
                 "each module call costs about 50 us more in backward, a few %% of a step for jobs "
                 "of many small modules (docs/install.md); reinstall with `pip install "
                 "--no-build-isolation .` from the source folder to get them")


def _beside_injector(recorder):
    where = getattr(recorder, "injector_path", None)
    injector = where() if where is not None else None
    return os.path.join(os.path.dirname(injector), LIBRARY) if injector else None


def _import(path):
    loader = importlib.machinery.ExtensionFileLoader(_MODULE, path)
    spec = importlib.util.spec_from_file_location(_MODULE, path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    sys.modules[_MODULE] = module  # one instance: its state is the library's anyway
    return module


def _fallback(why):
    try:
        sys.stderr.write("gcprof: backward ranges recorded by python hooks (slower): %s\n" % why)
        sys.stderr.flush()
    except Exception:
        pass
    return None

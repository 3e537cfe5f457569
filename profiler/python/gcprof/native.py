"""The one place that talks to the injector (libgcprof_inject.so) through ctypes.

`gcprof record` LD_PRELOADs the injector, so its entry points are visible in
the process's global symbol table and `ctypes.CDLL(None)` finds them. When
they are absent the job is not being recorded and `load()` returns None.

Everything else in the shim talks to a *recorder*: any object with the
methods of `InjectorRecorder`. Tests substitute their own through
GCPROF_RECORDER=module:callable (the callable returns a recorder), which lets
the hook logic be checked without the injector.
"""
import ctypes
import importlib
import os

# Phases of gcprof_inject_range_start (profiler/include/gcprof/gcprof.h).
USER, FORWARD, BACKWARD = 0, 1, 2


class InjectorRecorder:
    """Forwards shim events to the injector's exported C functions."""

    def __init__(self, lib):
        u64, i64, i32, dbl, cstr = (ctypes.c_uint64, ctypes.c_int64, ctypes.c_int,
                                    ctypes.c_double, ctypes.c_char_p)
        self._start = _bind(lib, "gcprof_inject_range_start", u64, [cstr, i32])
        self._end = _bind(lib, "gcprof_inject_range_end", None, [u64])
        self._io = _bind(lib, "gcprof_inject_range_io", None, [u64, i64, i64])
        self._end_io = _bind(lib, "gcprof_inject_range_end_io", None, [u64, i64, i64])
        self._step_begin = _bind(lib, "gcprof_inject_step_begin", None, [i64])
        self._step_end = _bind(lib, "gcprof_inject_step_end", None, [])
        self._scalar = _bind(lib, "gcprof_inject_scalar", None, [cstr, dbl])
        self._runtime = _bind(lib, "gcprof_inject_set_runtime", None, [cstr])
        self._active = _bind(lib, "gcprof_inject_active", i32, [])
        # Module names repeat every step: encode each once.
        self._encoded = {}

    def _bytes(self, name):
        b = self._encoded.get(name)
        if b is None:
            b = self._encoded[name] = name.encode("utf-8", "replace")
        return b

    def range_start(self, name, phase):
        return self._start(self._bytes(name), phase)

    def range_end(self, range_id):
        if range_id:
            self._end(range_id)

    def range_io(self, range_id, input_bytes, output_bytes):
        if range_id:
            self._io(range_id, input_bytes, output_bytes)

    def range_end_io(self, range_id, input_bytes, output_bytes):
        """range_io then range_end, in one call into the injector (a module's forward end)."""
        if range_id:
            self._end_io(range_id, input_bytes, output_bytes)

    def step_begin(self, step):
        self._step_begin(step)

    def step_end(self):
        self._step_end()

    def scalar(self, name, value):
        self._scalar(self._bytes(name), float(value))

    def set_runtime(self, name):
        self._runtime(self._bytes(name))

    def active(self):
        return bool(self._active())

    def native_entry_points(self):
        """For the C++ backward hooks (native_hooks.py): 0, 0 makes them dlsym the
        injector's range_start/range_end themselves."""
        return 0, 0

    def injector_path(self):
        """The file the injector was loaded from (dladdr), or None."""
        info = _DlInfo()
        try:
            dladdr = ctypes.CDLL(None).dladdr
            dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
            address = ctypes.cast(self._start, ctypes.c_void_p).value
            if not dladdr(address, ctypes.byref(info)) or not info.dli_fname:
                return None
        except (AttributeError, OSError):
            return None
        return os.fsdecode(info.dli_fname)


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _bind(lib, symbol, restype, argtypes):
    fn = getattr(lib, symbol)  # AttributeError when the injector is not loaded
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def load():
    """The recorder for this process, or None when nothing records it."""
    seam = os.environ.get("GCPROF_RECORDER")
    if seam:
        module_name, _, attr = seam.partition(":")
        return getattr(importlib.import_module(module_name), attr or "recorder")()
    try:
        return InjectorRecorder(ctypes.CDLL(None))
    except (AttributeError, OSError):
        return None

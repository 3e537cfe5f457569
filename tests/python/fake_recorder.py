"""A recorder that stands in for the injector in tests.

In process: `FakeRecorder()` keeps events in a list. In a subprocess started
with GCPROF_RECORDER=fake_recorder:from_env and GCPROF_FAKE_EVENTS=path, the
events are written to that file as JSON lines when the process exits.
"""
import atexit
import collections
import ctypes
import json
import os


class FakeRecorder:
    def __init__(self):
        self.events = []  # (kind, ...) tuples
        self._next_id = 0
        self.step = -1
        # Calls per method as the shim makes them (each would be one call into
        # the injector); range_end_io's own range_io and range_end not counted.
        self.calls = collections.Counter()
        self._inside = False

    def _count(self, method):
        if not self._inside:
            self.calls[method] += 1

    def range_start(self, name, phase):
        self._count("range_start")
        self._next_id += 1
        self.events.append(("start", self._next_id, name, phase, self.step))
        return self._next_id

    def range_end(self, range_id):
        self._count("range_end")
        if range_id:
            self.events.append(("end", range_id))

    def range_io(self, range_id, input_bytes, output_bytes):
        self._count("range_io")
        self.events.append(("io", range_id, input_bytes, output_bytes))

    def range_end_io(self, range_id, input_bytes, output_bytes):
        self._count("range_end_io")
        self._inside = True
        try:
            self.range_io(range_id, input_bytes, output_bytes)
            self.range_end(range_id)
        finally:
            self._inside = False

    def step_begin(self, step):
        self.step = step
        self.events.append(("step_begin", step))

    def step_end(self):
        self.events.append(("step_end", self.step))

    def scalar(self, name, value):
        self.events.append(("scalar", name, value, self.step))

    def set_runtime(self, name):
        self.events.append(("runtime", name))

    def active(self):
        return True

    def native_entry_points(self):
        """C function pointers into range_start/range_end/range_end_io for the C++
        hooks (profiler/python/gcprof/native_hooks.py), which then record here too."""
        if not hasattr(self, "_c_entry_points"):
            start = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_char_p, ctypes.c_int)(
                lambda name, phase: self.range_start(name.decode("utf-8"), phase))
            end = ctypes.CFUNCTYPE(None, ctypes.c_uint64)(self.range_end)
            end_io = ctypes.CFUNCTYPE(None, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int64)(
                self.range_end_io)
            self._c_entry_points = (start, end, end_io)  # alive as long as the recorder
        return tuple(ctypes.cast(f, ctypes.c_void_p).value for f in self._c_entry_points)


def from_env():
    rec = FakeRecorder()
    path = os.environ["GCPROF_FAKE_EVENTS"]

    def dump():
        with open(path, "w") as f:
            for e in rec.events:
                f.write(json.dumps(e) + "\n")

    atexit.register(dump)
    return rec


def read_events(path):
    with open(path) as f:
        return [tuple(json.loads(line)) for line in f]


def ranges(events):
    """Closed ranges as dicts: name, phase, step, order of start and end, io."""
    out, by_id = [], {}
    for i, e in enumerate(events):
        if e[0] == "start":
            r = {"id": e[1], "name": e[2], "phase": e[3], "step": e[4], "start": i, "end": None,
                 "io": None}
            by_id[e[1]] = r
            out.append(r)
        elif e[0] == "end":
            by_id[e[1]]["end"] = i
        elif e[0] == "io":
            by_id[e[1]]["io"] = (e[2], e[3])
    return out

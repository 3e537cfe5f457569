"""`gcprof attach`'s python side (attach.try_start) in a job that is already
training: host memory from before attach is the injector's heap walk (taken
before the shim runs), so try_start reports none of it again; its hooks go in
between module calls and outside backward, even when the job's thread runs
meanwhile (a ctypes call lets it: the test's fake injector runs a training
step there)."""
import ctypes
import gc
import os
import sys
import threading

from harness import SHIM

os.environ["GCPROF_NATIVE_HOOKS"] = "0"  # the python hooks call only the fake below
sys.path.insert(0, SHIM)

import torch  # noqa: E402

FAKE = "fake-injector.so"


class FakeInjector:
    """The injector's C entry points as python callables, in call order."""

    def __init__(self):
        self.calls = []
        self._next = 0
        for name in ("range_end", "range_io", "range_end_io", "step_end", "scalar",
                     "set_runtime"):
            setattr(self, "gcprof_inject_" + name, self._noting(name))
        self.gcprof_inject_step_begin = self._noting("step_begin")
        self.gcprof_inject_active = lambda: 1
        # Plain functions: ctypes' restype and argtypes are set on them.
        self.gcprof_inject_range_start = lambda *args: self._range_start(*args)
        self.gcprof_attach_baseline = self._noting("baseline")

    def _noting(self, name):
        def call(*args):
            self.calls.append((name,) + args)
        return call

    def _range_start(self, name, *args):
        self._next += 1
        self.calls.append(("range_start", name.decode() if isinstance(name, bytes) else name))
        return self._next


def _fake_dlls(fake):
    real = {name: getattr(ctypes, name) for name in ("CDLL", "PyDLL")}
    for name, cls in real.items():
        setattr(ctypes, name, lambda path, *a, _cls=cls, **k: fake if path == FAKE else _cls(path, *a, **k))
    return lambda: [setattr(ctypes, name, cls) for name, cls in real.items()]


def test_host_tensors_are_left_to_the_heap_walk():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train_step():
        opt.zero_grad(set_to_none=True)
        model(torch.randn(8, 64)).sum().backward()
        opt.step()

    train_step()  # the job trained before attach: AdamW's state exists
    fake = FakeInjector()
    restore = _fake_dlls(fake)
    from gcprof import attach
    try:
        assert attach.try_start(FAKE) == attach.READY
        train_step()  # the first step after attach
    finally:
        attach.detach()
        restore()
    names = [c[0] for c in fake.calls]
    # Parameters and AdamW's moments are CPU storages: walked in the heap by
    # the injector already, reported here they would count twice.
    assert "step_begin" in names, names
    assert "baseline" not in names, names


def _job():
    gc.collect()  # an earlier test's optimizer on the heap would hold steps open (steps.py)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), _Gate(), torch.nn.Linear(64, 4))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def train_step():
        opt.zero_grad(set_to_none=True)
        model(torch.randn(8, 64)).sum().backward()
        opt.step()

    train_step()
    return model, train_step, opt


class _Gate(torch.nn.Module):
    """Where the job's thread waits, inside the model's call, when told to."""
    inside = None  # (entered, go) events while armed

    def forward(self, x):
        if self.inside:
            entered, go = self.inside
            self.inside = None
            entered.set()
            go.wait()
        return x


def _steps_and_names(calls):
    """[(step number, [range names in that step])] from the fake's calls."""
    steps = []
    for call in calls:
        if call[0] == "step_begin":
            steps.append((call[1], []))
        elif call[0] == "range_start" and steps:
            steps[-1][1].append(call[1])
    return steps


def _attach(fake):
    restore = _fake_dlls(fake)
    from gcprof import attach
    try:
        assert attach.try_start(FAKE) == attach.READY
    except BaseException:
        restore()
        raise
    return lambda: (attach.detach(), restore())


def test_a_forward_begun_before_the_hooks_opens_no_step():
    # The job's thread enters the model's forward after try_start looked
    # (python lets it run between any two bytecodes of try_start) and is
    # still inside it when the hooks go in: the modules it calls next are
    # not roots, and the first step is its next whole forward.
    model, train_step, _ = _job()
    entered, go = threading.Event(), threading.Event()
    job = threading.Thread(target=train_step)

    def job_runs_into_the_forward():
        model[1].inside = (entered, go)
        job.start()
        assert entered.wait(30)

    fake = FakeInjector()
    # The first walk of the heap (the job's optimizers, looked up after the
    # busy check and before any module hook goes in) lets the job run.
    walk = gc.get_objects
    gc.get_objects = lambda *a: (gc.__setattr__("get_objects", walk), job_runs_into_the_forward(),
                                 walk(*a))[2]
    try:
        undo = _attach(fake)
    finally:
        gc.get_objects = walk
    try:
        go.set()
        job.join(30)
        train_step()
    finally:
        undo()
    steps = _steps_and_names(fake.calls)
    assert len(steps) == 1, steps
    names = {n for n, _ in model.named_modules()}
    assert steps[0][1] and set(steps[0][1]) <= names, (steps, names)


def test_steps_carry_the_jobs_numbers_when_the_job_runs_during_attach():
    # The job trains at every moment try_start runs long python (here: each
    # walk of the heap): the first step recorded, whenever it opens, carries
    # the job's own number (AdamW's count), and so do the ones after it.
    _, train_step, opt = _job()
    fake = FakeInjector()
    walk = gc.get_objects
    gc.get_objects = lambda *a: (train_step(), walk(*a))[1]
    try:
        undo = _attach(fake)
    finally:
        gc.get_objects = walk
    try:
        train_step()
        train_step()
    finally:
        undo()
    numbers = [n for n, _ in _steps_and_names(fake.calls)]
    # The step numbered n is the one after the job's n-th optimizer step.
    taken = max(int(state["step"]) for state in opt.state.values())
    assert numbers == [taken - 2, taken - 1], (numbers, taken)


def test_device_baseline_reads_segments_and_allocated_blocks_from_the_snapshot():
    # torch.cuda.memory_snapshot()'s shape (torch/cuda/memory.py, _snapshot):
    # a segment is reported by its mapped size, each tensor in it by the bytes
    # requested (as the allocator's tracker reports them); free blocks and
    # blocks waiting for another stream (freed for the tracker) are not.
    from gcprof import device_baseline
    snapshot = [
        {"device": 1, "address": 0x7f0000000000, "total_size": 2 << 20, "stream": 7,
         "blocks": [
             {"address": 0x7f0000000000, "size": 1 << 20, "requested_size": 1000000,
              "state": "active_allocated"},
             {"address": 0x7f0000100000, "size": 512 << 10, "requested_size": 0,
              "state": "inactive"},
             {"address": 0x7f0000180000, "size": 512 << 10, "requested_size": 400000,
              "state": "active_awaiting_free"}]},
        # An older torch without block addresses: blocks lie in order from the segment's.
        {"device": 0, "address": 0x7e0000000000, "total_size": 4096, "stream": 0,
         "blocks": [{"size": 1024, "requested_size": 1000, "state": "inactive"},
                    {"size": 3072, "requested_size": 3000, "state": "active_allocated"}]},
    ]
    S, T = device_baseline.SEGMENT, device_baseline.TENSOR
    assert list(device_baseline.blocks(snapshot)) == [
        (0x7f0000000000, 2 << 20, 1, 7, S),
        (0x7f0000000000, 1000000, 1, 7, T),
        (0x7e0000000000, 4096, 0, 0, S),
        (0x7e0000000400, 3000, 0, 0, T),
    ]


def test_a_backward_in_progress_is_seen_from_another_thread():
    # try_start waits for no backward to run, on a CPU job too: the engine
    # replaces and frees tensors (a first .grad) without the GIL, and the
    # baseline's walk of live tensors raced it (a use after free that killed
    # an attached job).
    from gcprof import attach
    x = torch.randn(4, requires_grad=True)
    entered, go = threading.Event(), threading.Event()

    def hold(grad):
        entered.set()
        go.wait(30)
        return grad

    y = (x * 2).sum()
    x.register_hook(hold)
    job = threading.Thread(target=y.backward)
    codes = attach._backward_codes(torch)
    assert codes, "torch.autograd.backward and grad not found"
    assert not attach._inside(codes)
    job.start()
    try:
        assert entered.wait(30)
        assert attach._inside(codes)
        fake = FakeInjector()
        restore = _fake_dlls(fake)
        try:
            assert attach.try_start(FAKE, "host") == attach.BUSY
        finally:
            restore()
        assert not any(c[0] == "baseline" for c in fake.calls), fake.calls
    finally:
        go.set()
        job.join(30)
    assert not attach._inside(codes)

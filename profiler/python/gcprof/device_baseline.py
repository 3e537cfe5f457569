"""What PyTorch's CUDA caching allocator holds when `gcprof attach` comes in.

The allocator's trace tracker (allocator_trace.py) reports what it does from
the moment it is attached; the segments it reserved and the tensor blocks in
them before that are read from its own snapshot (torch.cuda.memory_snapshot,
taken under its lock) right after, and reported once as blocks allocated at
attach, so that a trace's device peaks are absolute, as `record`'s are.

The tracker comes first: a block made in between is in the snapshot and
already recorded, and the injector skips it (gcprof_attach_device_baseline).
A block freed between the snapshot and its report would stay live in the
trace, so the snapshot is taken only while no backward runs (the engine's
threads free tensors without the GIL); attach.py waits for such a moment.
"""
import ctypes

from . import allocator_trace

TENSOR, SEGMENT = 0, 1


def observe(torch, recorder, lib):
    """Tracker attached and baseline reported: True. False when CUDA is not in
    use or the tracker cannot attach (its reason is on stderr): device
    tensors are then reported with the host baseline, as before."""
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available() or not cuda.is_initialized():
        return False
    attacher = allocator_trace.install(torch, recorder)
    if attacher is None or not attacher.attached:
        return False
    report = lib.gcprof_attach_device_baseline
    report.restype = None
    report.argtypes = [ctypes.c_uint64, ctypes.c_int64, ctypes.c_int, ctypes.c_int64,
                       ctypes.c_int]
    for address, size, device, stream, kind in blocks(cuda.memory_snapshot()):
        report(address, size, device, stream, kind)
    return True


def blocks(snapshot):
    """(address, bytes, device, stream, kind) of each reserved segment and of
    each tensor block in it, as the tracker reports them: segments by their
    mapped size, tensors by the bytes requested. Blocks waiting for another
    stream are freed already for the tracker (FREE_REQUESTED)."""
    for segment in snapshot:
        device, stream = segment.get("device", 0), segment.get("stream", 0)
        address = segment["address"]
        yield address, segment["total_size"], device, stream, SEGMENT
        for block in segment.get("blocks", ()):
            start = block.get("address", address)  # older torch: blocks lie in order
            address = start + block["size"]
            if block.get("state") == "active_allocated":
                yield start, block.get("requested_size", block["size"]), device, stream, TENSOR

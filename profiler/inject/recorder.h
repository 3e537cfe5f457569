// The injector's recording entry points. Every hook (malloc, NVTX, the C API,
// CUPTI callbacks) reports through these; they append to the calling thread's
// buffer without allocation or syscalls, and the writer thread (writer.cpp)
// drains the buffers into the trace. The only locks are spinlocks held for a
// few instructions: one stripe of the live-address set (address_set.h) per
// allocation and free of device memory (and of any memory when attached),
// and the name table's (name_table.h) when a name is seen for the first time.
#pragma once

#include <cstdint>

namespace gcprof::inject {

using Ns = int64_t;

Ns nowNs();  // CLOCK_MONOTONIC through the vDSO: no syscall

// True while events are being recorded (set up, inside the --steps window,
// not paused, not a forked child). Hooks test it before doing anything.
bool active();

// Host or device memory. `device` -1 is host; `api` and `kind` are
// gcprof::AllocApi / gcprof::AllocKind values (profiler/store/trace.h).
// `force` records it regardless of --min-bytes (device memory, tensors).
void recordAlloc(uint64_t addr, int64_t bytes, int api, int device = -1, int64_t stream = 0,
                 int kind = 0, bool force = false, Ns time = 0);
// Reported before the real free, so the address cannot be reused in between.
// Frees of addresses that were never recorded cost one hash probe. `kind`
// is the AllocKind the block was recorded with (a segment and its first
// block share an address).
void recordFree(uint64_t addr, int device = -1, Ns time = 0, int kind = 0);

// The api code of the blocks PyTorch's own caching allocator reports
// (gcprof::AllocApi::C10CachingAllocator): its segments replace the raw
// cudaMalloc / cuMemMap rows CUPTI recorded for the same memory.
constexpr int kApiC10CachingAllocator = 25;

// Ranges (phase: gcprof_phase); ids are process-unique and never 0.
uint64_t rangeStart(const char* name, int phase, int domain);
// The same for a name internName() returned: the C++ module hooks intern a
// module's name once, not at each of its calls (a hash and two cache misses).
uint64_t rangeStartInterned(const char* interned, int phase, int domain);
void rangeEnd(uint64_t id);
uint64_t currentRange();  // innermost open range of the calling thread, 0 = none

void stepBegin(int64_t step);
void stepEnd();
void scalar(const char* name, double value);

// A device kernel (CUDA) already mapped to the host clock, with the range that
// was open on the launching thread when it was launched.
void recordKernel(const char* name, int device, int64_t stream, Ns start, Ns end,
                  int64_t correlation, uint64_t range);

// Records lost before they reached us (CUPTI's dropped counts, full buffers).
void countDropped(int64_t n);

// "cuda" once the CUDA backend attached; "host" otherwise.
void setBackend(const char* name);

}  // namespace gcprof::inject

namespace gcprof::inject {
// Tensor bytes into and out of a module call (the python shim reports them).
void rangeIO(uint64_t id, int64_t input_bytes, int64_t output_bytes);
// "python" when the python shim marks modules, so the advisor knows plans can
// only checkpoint single modules; "native" (default) otherwise.
void setRuntime(const char* name);
}  // namespace gcprof::inject

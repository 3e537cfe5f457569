// Both peaks of a CUDA run, as `show --json`, the reports and `verify` give
// them: allocated (tensor bytes) and reserved (the caching allocator's
// segments). Reserved is measured when the trace holds the allocator's
// segment events, else predicted by replaying its tensor events through the
// allocator model with the run's PYTORCH_CUDA_ALLOC_CONF.
#pragma once

#include <string>

#include "trace.h"

namespace gcprof::advisor {

struct DevicePeaks {
  bool device = false;          // the run has device memory events
  Bytes allocated = -1;         // device tensors' peak; -1: no tensor events
  Bytes reserved = -1;          // -1: neither segments nor a replayable allocator
  std::string reserved_source;  // "segments" (recorded) | "model" (predicted) | ""
  std::string why_not;          // when reserved is -1 on a device run: why
  // PyTorch's allocator observed (its trace tracker, AllocApi::C10CachingAllocator):
  // allocated and reserved are its rows alone, and the device memory it does
  // not see (NCCL, raw cudaMalloc: CUPTI's rows) is a series of its own.
  bool observed_allocator = false;
  Bytes other = -1;             // peak of that other device memory; -1: none recorded
};

DevicePeaks devicePeaks(const Trace& trace);

// The tensor events of `trace` through the caching allocator model: the
// reserved peak (every device together). -1 when the run's allocator is not
// the native one or its settings do not parse (`why_not` says which).
Bytes replayedReservedPeak(const Trace& trace, std::string* why_not = nullptr);

}  // namespace gcprof::advisor

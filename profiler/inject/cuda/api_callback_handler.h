// CUPTI runtime/driver API callbacks, on the application's own thread inside
// the CUDA call:
// - memory calls (cudaMalloc/cudaFree, cudaMallocAsync/cudaFreeAsync and the
//   pool variant, cuMemAlloc/cuMemFree and their async forms, and the
//   virtual-memory API) become allocation events with device, stream and the
//   range open on the calling thread; frees are reported on entry, before
//   the memory can be handed out again;
// - kernel launches leave the calling thread's range under their correlation
//   id, for the kernel records that arrive later (KernelRecordHandler).
// The runtime implements its memory calls with driver calls that raise their
// own callbacks; those nested callbacks are recognised and not counted twice.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>

#include "correlation_ranges.h"
#include "cupti_api.h"
#include "virtual_memory_mappings.h"

namespace gcprof::inject::cuda {

struct CallbackIdList {
  const CUpti_CallbackId* ids;
  int count;
};

class ApiCallbackHandler {
 public:
  ApiCallbackHandler(CuptiApi& api, CorrelationRanges& correlations,
                     VirtualMemoryMappings& mappings)
      : api_(api), correlations_(correlations), mappings_(mappings) {}

  void handle(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData* data);

  // The callbacks to enable, per domain.
  static CallbackIdList runtimeIds();
  static CallbackIdList driverIds();

  int64_t allocations() const { return allocations_.load(std::memory_order_relaxed); }
  int64_t frees() const { return frees_.load(std::memory_order_relaxed); }
  int64_t launches() const { return launches_.load(std::memory_order_relaxed); }

 private:
  void onRuntime(CUpti_CallbackId cbid, const CUpti_CallbackData& d);
  void onDriver(CUpti_CallbackId cbid, const CUpti_CallbackData& d);
  void onLaunch(const CUpti_CallbackData& d);
  void onVirtualMemory(CUpti_CallbackId cbid, const CUpti_CallbackData& d);
  void reportAlloc(const CUpti_CallbackData& d, uint64_t addr, int64_t bytes, int api, int kind,
                   CUstream stream, bool per_thread_stream);
  void reportFree(const CUpti_CallbackData& d, uint64_t addr, int kind);
  int deviceOf(const CUpti_CallbackData& d);
  int64_t streamOf(const CUpti_CallbackData& d, CUstream stream, bool per_thread_stream);

  CuptiApi& api_;
  CorrelationRanges& correlations_;
  VirtualMemoryMappings& mappings_;
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> frees_{0};
  std::atomic<int64_t> launches_{0};
};

}  // namespace gcprof::inject::cuda

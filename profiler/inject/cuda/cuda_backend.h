// The CUDA backend: subscribes to CUPTI, owns the handlers, and is where
// CUPTI's callbacks land. start() either attaches completely or undoes what it
// did and says why in one line (CUPTI missing or too old, no driver, another
// CUPTI client such as torch.profiler or Nsight already attached), and the
// job is then recorded by the host backend alone.
//
// Locking: CUPTI calls are made only from start/stop/flush and from inside
// CUPTI's own callbacks, never while an OwnLock is held (own_lock.h).
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "activity_buffer_pool.h"
#include "api_callback_handler.h"
#include "clock_mapping.h"
#include "correlation_ranges.h"
#include "cupti_api.h"
#include "kernel_record_handler.h"
#include "memory_record_handler.h"
#include "virtual_memory_mappings.h"

namespace gcprof::inject::cuda {

struct CudaBackendOptions {
  size_t buffer_bytes = ActivityBufferPool::kDefaultBufferBytes;
  size_t max_buffers = ActivityBufferPool::kDefaultMaxBuffers;
  size_t correlation_slots = CorrelationRanges::kDefaultSlots;
  // CUPTI hands over partly filled buffers this often, so kernels reach the
  // trace while the job runs rather than all at exit.
  uint32_t flush_period_ms = 200;
  bool memory_records = true;  // MEMORY2 records for allocations callbacks miss
};

class CudaBackend {
 public:
  explicit CudaBackend(CuptiApi& api, CudaBackendOptions options = {});
  ~CudaBackend();
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  // One backend at a time per process: CUPTI's buffer callbacks carry no
  // user pointer, so they reach the started backend through a global.
  bool start();
  const char* failure() const { return failure_; }
  bool started() const { return started_; }
  // True once the job created a CUDA context (a GPU is really in use).
  bool sawContext() const { return saw_context_.load(std::memory_order_relaxed); }

  // Hands over every buffer CUPTI holds, complete or not (exit, end of run).
  void flush();
  // flush, then disable and unsubscribe.
  void stop();

  // CUPTI's entry points (the C callbacks in cuda_backend.cpp forward here).
  void onCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  void onBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records);
  void onBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                         size_t valid_bytes);

  const ActivityBufferPool& buffers() const { return buffers_; }
  const KernelRecordHandler& kernelRecords() const { return kernels_; }
  const MemoryRecordHandler& memoryRecords() const { return memory_; }
  const ApiCallbackHandler& apiCallbacks() const { return callbacks_; }
  const ClockMapping& clock() const { return clock_; }
  int64_t droppedRecords() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  bool fail(const char* what, CUptiResult result);
  void undo();
  void sampleClock();
  void dispatch(const CUpti_Activity* record);

  CuptiApi& api_;
  const CudaBackendOptions options_;
  ActivityBufferPool buffers_;
  CorrelationRanges correlations_;
  ClockMapping clock_;
  VirtualMemoryMappings mappings_;
  KernelRecordHandler kernels_;
  MemoryRecordHandler memory_;
  ApiCallbackHandler callbacks_;

  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool subscribed_ = false;
  bool started_ = false;
  bool kernels_enabled_ = false;
  bool memory_enabled_ = false;
  std::atomic<bool> saw_context_{false};
  std::atomic<int64_t> dropped_{0};
  char failure_[512] = {0};
};

}  // namespace gcprof::inject::cuda

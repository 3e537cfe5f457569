#include "cuda_backend.h"

#include <cstdio>

#include "hook_guard.h"
#include "recorder.h"

namespace gcprof::inject::cuda {
namespace {

std::atomic<CudaBackend*> g_started{nullptr};

// Everything below runs inside CUDA calls or on CUPTI's thread: whatever we
// allocate there is ours, not the job's (hook_guard.h).
void CUPTIAPI apiCallback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  HookGuard guard;
  static_cast<CudaBackend*>(userdata)->onCallback(domain, cbid, data);
}

void CUPTIAPI bufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  HookGuard guard;
  if (CudaBackend* b = g_started.load(std::memory_order_acquire)) {
    b->onBufferRequested(buffer, size, max_records);
  } else {
    *buffer = nullptr;
    *size = 0;
    *max_records = 0;
  }
}

void CUPTIAPI bufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                              size_t valid_bytes) {
  HookGuard guard;
  if (CudaBackend* b = g_started.load(std::memory_order_acquire))
    b->onBufferCompleted(context, stream_id, buffer, size, valid_bytes);
}

// CUPTI stamps its records with this clock from then on: ours (CLOCK_MONOTONIC).
uint64_t CUPTIAPI hostTimestamp() { return static_cast<uint64_t>(nowNs()); }

}  // namespace

CudaBackend::CudaBackend(CuptiApi& api, CudaBackendOptions options)
    : api_(api),
      options_(options),
      buffers_(options.buffer_bytes, options.max_buffers),
      correlations_(options.correlation_slots),
      kernels_(correlations_, clock_),
      memory_(correlations_, clock_),
      callbacks_(api, correlations_, mappings_) {}

CudaBackend::~CudaBackend() {
  if (started_) stop();
}

bool CudaBackend::fail(const char* what, CUptiResult result) {
  std::snprintf(failure_, sizeof failure_, "%s failed: %s", what, api_.resultString(result));
  undo();
  return false;
}

void CudaBackend::undo() {
  if (kernels_enabled_) api_.activityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (memory_enabled_) api_.activityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
  kernels_enabled_ = memory_enabled_ = false;
  if (subscribed_) api_.unsubscribe(subscriber_);
  subscribed_ = false;
  CudaBackend* self = this;
  g_started.compare_exchange_strong(self, nullptr);
  started_ = false;
}

bool CudaBackend::start() {
  if (started_) return true;
  if (!api_.available()) {
    std::snprintf(failure_, sizeof failure_, "%s", api_.unavailableReason());
    return false;
  }
  uint32_t version = 0;
  if (CUptiResult r = api_.getVersion(&version); r != CUPTI_SUCCESS)
    return fail("cuptiGetVersion", r);
  // 0: this CUPTI cannot tell yet (it reads the driver lazily); subscribing says more.
  if (version != 0 && version < kMinCuptiVersion) {
    std::snprintf(failure_, sizeof failure_,
                  "CUPTI API version %u is too old (%u = CUDA 11.8 or newer needed)", version,
                  kMinCuptiVersion);
    return false;
  }
  CudaBackend* expected = nullptr;
  if (!g_started.compare_exchange_strong(expected, this)) {
    std::snprintf(failure_, sizeof failure_, "another gcprof CUDA backend is already started");
    return false;
  }
  // Before any activity is enabled, as CUPTI requires; older CUPTIs lack it
  // and we map their timestamps ourselves.
  if (api_.registerTimestampCallback(hostTimestamp) == CUPTI_SUCCESS)
    clock_.useHostClock();
  else
    sampleClock();

  if (CUptiResult r = api_.subscribe(&subscriber_, apiCallback, this); r != CUPTI_SUCCESS) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
      return fail(
          "cuptiSubscribe (another CUPTI client, e.g. torch.profiler or Nsight, is attached)", r);
    return fail("cuptiSubscribe (no CUDA driver or GPU?)", r);
  }
  subscribed_ = true;
  int enabled = 0;
  auto enable = [&](CUpti_CallbackDomain domain, CallbackIdList list) {
    // An older CUPTI rejects ids it does not know; the others still work.
    for (int i = 0; i < list.count; ++i)
      enabled += api_.enableCallback(1, subscriber_, domain, list.ids[i]) == CUPTI_SUCCESS;
  };
  enable(CUPTI_CB_DOMAIN_RUNTIME_API, ApiCallbackHandler::runtimeIds());
  enable(CUPTI_CB_DOMAIN_DRIVER_API, ApiCallbackHandler::driverIds());
  if (enabled == 0)
    return fail("cuptiEnableCallback (no API callback could be enabled)", CUPTI_ERROR_UNKNOWN);
  api_.enableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                      CUPTI_CBID_RESOURCE_CONTEXT_CREATED);

  if (CUptiResult r = api_.activityRegisterCallbacks(bufferRequested, bufferCompleted);
      r != CUPTI_SUCCESS)
    return fail("cuptiActivityRegisterCallbacks", r);
  if (CUptiResult r = api_.activityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      r != CUPTI_SUCCESS)
    return fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
  kernels_enabled_ = true;
  if (options_.memory_records)
    memory_enabled_ = api_.activityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) == CUPTI_SUCCESS;
  if (options_.flush_period_ms) api_.activityFlushPeriod(options_.flush_period_ms);
  started_ = true;
  return true;
}

void CudaBackend::flush() {
  if (started_) api_.activityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void CudaBackend::stop() {
  if (!started_) return;
  flush();
  undo();
}

void CudaBackend::onCallback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    // The backend is "cuda" once a GPU is really used, not merely when
    // libcuda was initialised (a CUDA build of PyTorch on a CPU job).
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && !saw_context_.exchange(true))
      setBackend("cuda");
    return;
  }
  callbacks_.handle(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
}

void CudaBackend::onBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = buffers_.acquire();  // nullptr when all are out: CUPTI drops and counts
  *size = *buffer ? buffers_.bufferBytes() : 0;
  *max_records = 0;  // as many as fit
}

void CudaBackend::onBufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                    size_t /*size*/, size_t valid_bytes) {
  if (!clock_.usesHostClock()) sampleClock();
  if (buffer && valid_bytes > 0) {
    CUpti_Activity* record = nullptr;
    while (api_.activityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS && record)
      dispatch(record);
  }
  size_t dropped = 0;
  if (api_.activityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    dropped_.fetch_add(static_cast<int64_t>(dropped), std::memory_order_relaxed);
    countDropped(static_cast<int64_t>(dropped));
  }
  buffers_.release(buffer);
}

void CudaBackend::dispatch(const CUpti_Activity* record) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      kernels_.handle(*reinterpret_cast<const KernelRecord*>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      memory_.handle(*reinterpret_cast<const MemoryRecord*>(record));
      break;
    default:
      break;
  }
}

// Two host reads around one CUPTI read; the midpoint is the best host
// estimate of the moment CUPTI read its clock.
void CudaBackend::sampleClock() {
  uint64_t cupti = 0;
  Ns before = nowNs();
  if (api_.getTimestamp(&cupti) != CUPTI_SUCCESS || cupti == 0) return;
  Ns after = nowNs();
  clock_.addSample(cupti, before + (after - before) / 2);
}

}  // namespace gcprof::inject::cuda

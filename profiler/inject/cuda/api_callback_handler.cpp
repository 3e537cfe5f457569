#include "api_callback_handler.h"

#include <cupti.h>  // the callbacks' parameter structs (generated_*_meta.h)

#include "allocator_trace_attach.h"
#include "recorder.h"
#include "trace.h"

namespace gcprof::inject::cuda {
namespace {

// Depth of runtime memory calls on this thread: a driver memory callback
// inside one is the runtime's own implementation of it.
thread_local int t_runtime_memory_depth = 0;

const CUpti_CallbackId kRuntimeIds[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};

const CUpti_CallbackId kDriverIds[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

bool entering(const CUpti_CallbackData& d) { return d.callbackSite == CUPTI_API_ENTER; }

// cudaError_t and CUresult are both int-sized enums with 0 = success.
bool succeeded(const CUpti_CallbackData& d) {
  return d.callbackSite == CUPTI_API_EXIT && d.functionReturnValue &&
         *static_cast<const int*>(d.functionReturnValue) == 0;
}

template <typename Params>
const Params& params(const CUpti_CallbackData& d) {
  return *static_cast<const Params*>(d.functionParams);
}

uint64_t addressOf(void* const* out) { return out ? reinterpret_cast<uint64_t>(*out) : 0; }
uint64_t addressOf(const CUdeviceptr* out) { return out ? static_cast<uint64_t>(*out) : 0; }

constexpr int kTensor = static_cast<int>(AllocKind::Tensor);
constexpr int kSegment = static_cast<int>(AllocKind::Segment);

}  // namespace

CallbackIdList ApiCallbackHandler::runtimeIds() {
  return {kRuntimeIds, static_cast<int>(sizeof kRuntimeIds / sizeof kRuntimeIds[0])};
}

CallbackIdList ApiCallbackHandler::driverIds() {
  return {kDriverIds, static_cast<int>(sizeof kDriverIds / sizeof kDriverIds[0])};
}

void ApiCallbackHandler::handle(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const CUpti_CallbackData* data) {
  if (!data || !data->functionParams) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) onRuntime(cbid, *data);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) onDriver(cbid, *data);
}

int ApiCallbackHandler::deviceOf(const CUpti_CallbackData& d) {
  uint32_t device = 0;
  if (d.context && api_.getDeviceId(d.context, &device) == CUPTI_SUCCESS)
    return static_cast<int>(device);
  return -1;
}

// CUPTI's stream id, the one kernel records carry, so that allocations and
// kernels on a stream line up; 0 when CUPTI cannot tell.
int64_t ApiCallbackHandler::streamOf(const CUpti_CallbackData& d, CUstream stream,
                                     bool per_thread_stream) {
  uint32_t id = 0;
  if (d.context &&
      api_.getStreamIdEx(d.context, stream, per_thread_stream ? 1 : 0, &id) == CUPTI_SUCCESS)
    return id;
  return 0;
}

void ApiCallbackHandler::reportAlloc(const CUpti_CallbackData& d, uint64_t addr, int64_t bytes,
                                     int api, int kind, CUstream stream, bool per_thread_stream) {
  correlations_.rememberRecordedMemoryCall(d.correlationId);
  if (addr == 0) return;
  recordAlloc(addr, bytes, api, deviceOf(d), streamOf(d, stream, per_thread_stream), kind,
              /*force=*/true);
  allocations_.fetch_add(1, std::memory_order_relaxed);
}

void ApiCallbackHandler::reportFree(const CUpti_CallbackData& d, uint64_t addr, int kind) {
  correlations_.rememberRecordedMemoryCall(d.correlationId);
  if (addr == 0) return;  // cudaFree(nullptr) is legal and frees nothing
  recordFree(addr, deviceOf(d), 0, kind);
  frees_.fetch_add(1, std::memory_order_relaxed);
}

void ApiCallbackHandler::onLaunch(const CUpti_CallbackData& d) {
  if (!entering(d)) return;
  // Launches outside every range need no entry: an empty slot reads as 0.
  if (uint64_t range = currentRange()) correlations_.rememberLaunch(d.correlationId, range);
  launches_.fetch_add(1, std::memory_order_relaxed);
}

void ApiCallbackHandler::onRuntime(CUpti_CallbackId cbid, const CUpti_CallbackData& d) {
  const int async_api = static_cast<int>(AllocApi::CudaMallocAsync);
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020:
      if (entering(d)) {
        ++t_runtime_memory_depth;
        if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) maybeAttachAllocatorTrace();
        return;
      }
      if (t_runtime_memory_depth > 0) --t_runtime_memory_depth;
      if (!succeeded(d)) return;
      if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020) {
        auto& p = params<cudaMalloc_v3020_params>(d);
        reportAlloc(d, addressOf(p.devPtr), static_cast<int64_t>(p.size),
                    static_cast<int>(AllocApi::CudaMalloc), kSegment, nullptr, false);
      } else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020 ||
                 cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020) {
        // Same layout for both; the ptsz form means a per-thread default stream.
        auto& p = params<cudaMallocAsync_v11020_params>(d);
        reportAlloc(d, addressOf(p.devPtr), static_cast<int64_t>(p.size), async_api, kTensor,
                    reinterpret_cast<CUstream>(p.hStream),
                    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020);
      } else {
        auto& p = params<cudaMallocFromPoolAsync_v11020_params>(d);
        reportAlloc(d, addressOf(p.ptr), static_cast<int64_t>(p.size), async_api, kTensor,
                    reinterpret_cast<CUstream>(p.stream),
                    cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020);
      }
      return;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
      if (!entering(d)) {
        if (t_runtime_memory_depth > 0) --t_runtime_memory_depth;
        return;
      }
      ++t_runtime_memory_depth;
      // cudaFree and cudaFreeAsync both start with the pointer; each frees
      // the kind its allocating call was recorded as.
      reportFree(d, reinterpret_cast<uint64_t>(params<cudaFree_v3020_params>(d).devPtr),
                 cbid == CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020 ? kSegment : kTensor);
      return;
    default:
      onLaunch(d);
      return;
  }
}

void ApiCallbackHandler::onDriver(CUpti_CallbackId cbid, const CUpti_CallbackData& d) {
  const bool nested = t_runtime_memory_depth > 0;
  const int async_api = static_cast<int>(AllocApi::CudaMallocAsync);
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      if (!succeeded(d)) return;
      if (nested) {  // the runtime call around it records it
        correlations_.rememberRecordedMemoryCall(d.correlationId);
        return;
      }
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
        auto& p = params<cuMemAlloc_v2_params>(d);
        reportAlloc(d, addressOf(p.dptr), static_cast<int64_t>(p.bytesize),
                    static_cast<int>(AllocApi::CuMemAlloc), kSegment, nullptr, false);
      } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync ||
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz) {
        auto& p = params<cuMemAllocAsync_params>(d);
        reportAlloc(d, addressOf(p.dptr), static_cast<int64_t>(p.bytesize), async_api, kTensor,
                    p.hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz);
      } else {
        auto& p = params<cuMemAllocFromPoolAsync_params>(d);
        reportAlloc(d, addressOf(p.dptr), static_cast<int64_t>(p.bytesize), async_api, kTensor,
                    p.hStream, cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz);
      }
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      if (!entering(d)) return;
      if (nested) {
        correlations_.rememberRecordedMemoryCall(d.correlationId);
        return;
      }
      reportFree(d, static_cast<uint64_t>(params<cuMemFree_v2_params>(d).dptr),
                 cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2 ? kSegment : kTensor);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      // expandable_segments: the allocator's first physical memory.
      if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemCreate && entering(d)) maybeAttachAllocatorTrace();
      if (nested)
        correlations_.rememberRecordedMemoryCall(d.correlationId);
      else
        onVirtualMemory(cbid, d);
      return;
    default:
      onLaunch(d);
      return;
  }
}

void ApiCallbackHandler::onVirtualMemory(CUpti_CallbackId cbid, const CUpti_CallbackData& d) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      if (!succeeded(d)) return;
      auto& p = params<cuMemCreate_params>(d);
      int device = -1;
      if (p.prop && p.prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        device = p.prop->location.id;
      if (p.handle) mappings_.created(*p.handle, static_cast<int64_t>(p.size), device);
      correlations_.rememberRecordedMemoryCall(d.correlationId);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      if (entering(d)) mappings_.released(params<cuMemRelease_params>(d).handle);
      correlations_.rememberRecordedMemoryCall(d.correlationId);
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      if (!succeeded(d)) return;
      auto& p = params<cuMemMap_params>(d);
      int device = mappings_.deviceOf(p.handle);
      if (device < 0) device = deviceOf(d);
      mappings_.mapped(p.ptr, static_cast<int64_t>(p.size), device);
      correlations_.rememberRecordedMemoryCall(d.correlationId);
      recordAlloc(p.ptr, static_cast<int64_t>(p.size), static_cast<int>(AllocApi::CuMemMap), device,
                  0, kSegment, /*force=*/true);
      allocations_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      if (!entering(d)) return;
      auto& p = params<cuMemUnmap_params>(d);
      correlations_.rememberRecordedMemoryCall(d.correlationId);
      for (const auto& m : mappings_.unmapped(p.ptr, static_cast<int64_t>(p.size))) {
        recordFree(m.addr, m.device, 0, kSegment);
        frees_.fetch_add(1, std::memory_order_relaxed);
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace gcprof::inject::cuda

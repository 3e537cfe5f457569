#include "fake_cupti.h"

#include <algorithm>

#include "own_lock.h"

namespace gcprof::inject::cuda::testing {

FabricatedRecord kernelRecord(uint32_t correlation, uint64_t start, uint64_t end, uint32_t device,
                              uint32_t stream, const char* name) {
  KernelRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  r.start = start;
  r.end = end;
  r.completed = end;
  r.deviceId = device;
  r.streamId = stream;
  r.correlationId = correlation;
  r.name = name;
  FabricatedRecord f;
  f.bytes.resize(sizeof r);
  std::memcpy(f.bytes.data(), &r, sizeof r);
  return f;
}

FabricatedRecord memoryRecord(CUpti_ActivityMemoryOperationType op, uint64_t addr, uint64_t bytes,
                              uint64_t timestamp, uint32_t correlation, bool async,
                              CUpti_ActivityMemoryKind kind, uint32_t device, uint32_t stream) {
  MemoryRecord r;
  std::memset(&r, 0, sizeof r);
  r.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  r.memoryOperationType = op;
  r.memoryKind = kind;
  r.correlationId = correlation;
  r.address = addr;
  r.bytes = bytes;
  r.timestamp = timestamp;
  r.deviceId = device;
  r.streamId = stream;
  r.isAsync = async ? 1 : 0;
  if (async) r.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  FabricatedRecord f;
  f.bytes.resize(sizeof r);
  std::memcpy(f.bytes.data(), &r, sizeof r);
  return f;
}

void FakeCupti::called() {
  ++calls;
  if (OwnLock::heldByThisThread()) ++calls_under_own_lock;
}

void FakeCupti::fireApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                        CUpti_ApiCallbackSite site, const void* params, uint32_t correlation,
                        const int* return_value, CUcontext context) {
  if (!callback_ || !enabled_callbacks.count({domain, cbid})) return;
  CUpti_CallbackData d;
  std::memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = "fabricated";
  d.functionParams = params;
  d.functionReturnValue = const_cast<int*>(return_value);
  d.context = context;
  d.correlationId = correlation;
  callback_(userdata_, domain, cbid, &d);
}

void FakeCupti::fireContextCreated() {
  if (!callback_ ||
      !enabled_callbacks.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED}))
    return;
  CUpti_ResourceData d;
  std::memset(&d, 0, sizeof d);
  callback_(userdata_, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &d);
}

uint8_t* FakeCupti::requestBuffer(size_t* size) {
  uint8_t* buffer = nullptr;
  size_t max_records = 0;
  *size = 0;
  requested_(&buffer, size, &max_records);
  return buffer;
}

void FakeCupti::completeBuffer(uint8_t* buffer, size_t size,
                               const std::vector<FabricatedRecord>& records, CUcontext context,
                               uint32_t stream_id) {
  std::vector<size_t>& offsets = record_offsets_[buffer];
  offsets.clear();
  size_t used = 0;
  for (const FabricatedRecord& r : records) {
    if (used + r.bytes.size() > size) {
      ++dropped_next;  // did not fit: CUPTI would drop it and count it
      continue;
    }
    std::memcpy(buffer + used, r.bytes.data(), r.bytes.size());
    offsets.push_back(used);
    used += (r.bytes.size() + 7) & ~size_t{7};  // records are 8-byte aligned
  }
  completed_(context, stream_id, buffer, size, used);
}

bool FakeCupti::deliver(const std::vector<FabricatedRecord>& records, CUcontext context,
                        uint32_t stream_id) {
  size_t size = 0;
  uint8_t* buffer = requestBuffer(&size);
  if (!buffer) {  // CUPTI drops them and reports the count with a later buffer
    dropped_next += records.size();
    return false;
  }
  completeBuffer(buffer, size, records, context, stream_id);
  return true;
}

CUptiResult FakeCupti::getVersion(uint32_t* v) {
  called();
  *v = version;
  return CUPTI_SUCCESS;
}

const char* FakeCupti::resultString(CUptiResult result) {
  called();
  switch (result) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case CUPTI_ERROR_NOT_SUPPORTED:
      return "CUPTI_ERROR_NOT_SUPPORTED";
    default:
      return "CUPTI_ERROR_UNKNOWN";
  }
}

CUptiResult FakeCupti::subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                 void* userdata) {
  called();
  if (subscribe_result != CUPTI_SUCCESS) return subscribe_result;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(this);
  callback_ = callback;
  userdata_ = userdata;
  subscribed = true;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::unsubscribe(CUpti_SubscriberHandle) {
  called();
  subscribed = false;
  callback_ = nullptr;
  enabled_callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::enableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                      CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  called();
  if (unknown_cbids.count(cbid)) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable)
    enabled_callbacks.insert({domain, cbid});
  else
    enabled_callbacks.erase({domain, cbid});
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::registerTimestampCallback(CUpti_TimestampCallbackFunc func) {
  called();
  if (timestamp_callback_result == CUPTI_SUCCESS) timestamp_callback = func;
  return timestamp_callback_result;
}

CUptiResult FakeCupti::getTimestamp(uint64_t* timestamp) {
  called();
  *timestamp = cupti_now;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                 CUpti_BuffersCallbackCompleteFunc completed) {
  called();
  if (register_result != CUPTI_SUCCESS) return register_result;
  requested_ = requested;
  completed_ = completed;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::activityEnable(CUpti_ActivityKind kind) {
  called();
  if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && kernel_enable_result != CUPTI_SUCCESS)
    return kernel_enable_result;
  enabled_kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::activityDisable(CUpti_ActivityKind kind) {
  called();
  enabled_kinds.erase(kind);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::activityFlushAll(uint32_t) {
  called();
  ++flushes;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::activityFlushPeriod(uint32_t) {
  called();
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::activityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                             CUpti_Activity** record) {
  called();
  auto it = record_offsets_.find(buffer);
  if (it == record_offsets_.end()) return CUPTI_ERROR_INVALID_PARAMETER;
  const std::vector<size_t>& offsets = it->second;
  size_t next = 0;
  if (*record) {
    size_t at = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer);
    auto pos = std::find(offsets.begin(), offsets.end(), at);
    if (pos == offsets.end()) return CUPTI_ERROR_INVALID_PARAMETER;
    next = static_cast<size_t>(pos - offsets.begin()) + 1;
  }
  if (next >= offsets.size() || offsets[next] >= valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + offsets[next]);
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::activityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  called();
  *dropped = dropped_next;
  dropped_next = 0;  // CUPTI resets the count on every read
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::getDeviceId(CUcontext context, uint32_t* device_id) {
  called();
  auto it = devices.find(context);
  if (it == devices.end()) return CUPTI_ERROR_INVALID_CONTEXT;
  *device_id = it->second;
  return CUPTI_SUCCESS;
}

CUptiResult FakeCupti::getStreamIdEx(CUcontext, CUstream stream, uint8_t, uint32_t* stream_id) {
  called();
  auto it = streams.find(stream);
  if (it == streams.end()) return CUPTI_ERROR_INVALID_STREAM;
  *stream_id = it->second;
  return CUPTI_SUCCESS;
}

}  // namespace gcprof::inject::cuda::testing

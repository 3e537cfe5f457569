// A fake CUPTI for the CUDA backend's tests: it answers the CuptiApi calls as
// configured, keeps the callbacks the backend registers, and plays CUPTI's
// part by firing API callbacks with fabricated CUpti_CallbackData and
// delivering buffers of fabricated activity records. Every call checks that
// the backend does not hold one of its own locks (own_lock.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "activity_records.h"
#include "cupti_api.h"

namespace gcprof::inject::cuda::testing {

// Raw bytes of one activity record, as CUPTI would write it into a buffer.
struct FabricatedRecord {
  std::vector<uint8_t> bytes;
};

FabricatedRecord kernelRecord(uint32_t correlation, uint64_t start, uint64_t end,
                              uint32_t device = 0, uint32_t stream = 7,
                              const char* name = "gemm_kernel");
FabricatedRecord memoryRecord(CUpti_ActivityMemoryOperationType op, uint64_t addr, uint64_t bytes,
                              uint64_t timestamp, uint32_t correlation, bool async = false,
                              CUpti_ActivityMemoryKind kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                              uint32_t device = 0, uint32_t stream = 7);

class FakeCupti final : public CuptiApi {
 public:
  // What the calls answer (defaults: a healthy CUDA 13 CUPTI).
  bool is_available = true;
  const char* reason = "fake libcupti.so not found";
  uint32_t version = 130001;
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  CUptiResult timestamp_callback_result = CUPTI_SUCCESS;
  CUptiResult register_result = CUPTI_SUCCESS;
  CUptiResult kernel_enable_result = CUPTI_SUCCESS;
  std::set<CUpti_CallbackId> unknown_cbids;  // enableCallback rejects these
  uint64_t cupti_now = 0;                    // what getTimestamp answers
  size_t dropped_next = 0;                   // the next getNumDroppedRecords answer
  std::map<CUcontext, uint32_t> devices;     // context -> device id
  std::map<CUstream, uint32_t> streams;      // stream handle -> CUPTI stream id

  // What the backend did.
  int calls = 0;
  int calls_under_own_lock = 0;
  bool subscribed = false;
  std::set<std::pair<int, CUpti_CallbackId>> enabled_callbacks;  // (domain, cbid)
  std::set<CUpti_ActivityKind> enabled_kinds;
  int flushes = 0;
  CUpti_TimestampCallbackFunc timestamp_callback = nullptr;

  // Playing CUPTI: an API callback on the calling thread.
  void fireApi(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
               const void* params, uint32_t correlation, const int* return_value = nullptr,
               CUcontext context = nullptr);
  void fireContextCreated();
  // Asks the backend for a buffer, fills it, hands it back. False when the
  // backend had no buffer to give (then CUPTI drops and counts the records).
  bool deliver(const std::vector<FabricatedRecord>& records, CUcontext context = nullptr,
               uint32_t stream_id = 0);
  // The request half alone, to hold buffers as CUPTI does under load.
  uint8_t* requestBuffer(size_t* size);
  void completeBuffer(uint8_t* buffer, size_t size, const std::vector<FabricatedRecord>& records,
                      CUcontext context = nullptr, uint32_t stream_id = 0);

  // CuptiApi
  bool available() const override { return is_available; }
  const char* unavailableReason() const override { return reason; }
  CUptiResult getVersion(uint32_t* v) override;
  const char* resultString(CUptiResult result) override;
  CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                        void* userdata) override;
  CUptiResult unsubscribe(CUpti_SubscriberHandle subscriber) override;
  CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                             CUpti_CallbackDomain domain, CUpti_CallbackId cbid) override;
  CUptiResult registerTimestampCallback(CUpti_TimestampCallbackFunc func) override;
  CUptiResult getTimestamp(uint64_t* timestamp) override;
  CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                        CUpti_BuffersCallbackCompleteFunc completed) override;
  CUptiResult activityEnable(CUpti_ActivityKind kind) override;
  CUptiResult activityDisable(CUpti_ActivityKind kind) override;
  CUptiResult activityFlushAll(uint32_t flag) override;
  CUptiResult activityFlushPeriod(uint32_t period_ms) override;
  CUptiResult activityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                    CUpti_Activity** record) override;
  CUptiResult activityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                           size_t* dropped) override;
  CUptiResult getDeviceId(CUcontext context, uint32_t* device_id) override;
  CUptiResult getStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread_stream,
                            uint32_t* stream_id) override;

 private:
  void called();
  CUpti_CallbackFunc callback_ = nullptr;
  void* userdata_ = nullptr;
  CUpti_BuffersCallbackRequestFunc requested_ = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed_ = nullptr;
  std::map<const uint8_t*, std::vector<size_t>> record_offsets_;  // per delivered buffer
};

}  // namespace gcprof::inject::cuda::testing

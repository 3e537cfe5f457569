// The real CUPTI, opened at run time with dlopen instead of linked: an
// injector that needs libcupti.so would not even load into a job on a machine
// without it, and the job must still be recorded through the host backend.
// If the process already holds a libcupti (PyTorch's libtorch_cpu.so needs
// libcupti.so.13), that copy is used: two CUPTIs in one process fight over
// the driver's callback table.
#pragma once

#include "cupti_api.h"

namespace gcprof::inject::cuda {

class CuptiLibrary final : public CuptiApi {
 public:
  CuptiLibrary();  // opens the library and resolves its symbols; never throws
  CuptiLibrary(const CuptiLibrary&) = delete;
  CuptiLibrary& operator=(const CuptiLibrary&) = delete;

  bool available() const override { return available_; }
  const char* unavailableReason() const override { return reason_; }
  const char* path() const { return path_; }  // the library actually opened

  CUptiResult getVersion(uint32_t* version) override;
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
  bool open();
  bool resolve();

  void* handle_ = nullptr;
  bool available_ = false;
  char reason_[512] = {0};
  char path_[512] = {0};

  // Resolved entry points; the optional ones (newer CUPTIs only) may stay null.
  decltype(&::cuptiGetVersion) getVersion_ = nullptr;
  decltype(&::cuptiGetResultString) getResultString_ = nullptr;
  decltype(&::cuptiSubscribe) subscribe_ = nullptr;
  decltype(&::cuptiUnsubscribe) unsubscribe_ = nullptr;
  decltype(&::cuptiEnableCallback) enableCallback_ = nullptr;
  decltype(&::cuptiActivityRegisterTimestampCallback) registerTimestampCallback_ = nullptr;
  decltype(&::cuptiGetTimestamp) getTimestamp_ = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) activityRegisterCallbacks_ = nullptr;
  decltype(&::cuptiActivityEnable) activityEnable_ = nullptr;
  decltype(&::cuptiActivityDisable) activityDisable_ = nullptr;
  decltype(&::cuptiActivityFlushAll) activityFlushAll_ = nullptr;
  decltype(&::cuptiActivityFlushPeriod) activityFlushPeriod_ = nullptr;
  decltype(&::cuptiActivityGetNextRecord) activityGetNextRecord_ = nullptr;
  decltype(&::cuptiActivityGetNumDroppedRecords) activityGetNumDroppedRecords_ = nullptr;
  decltype(&::cuptiGetDeviceId) getDeviceId_ = nullptr;
  decltype(&::cuptiGetStreamIdEx) getStreamIdEx_ = nullptr;
};

}  // namespace gcprof::inject::cuda

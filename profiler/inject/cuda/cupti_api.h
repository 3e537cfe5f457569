// The CUPTI calls the CUDA backend makes, behind one small interface: the
// real library is opened with dlopen (CuptiLibrary) so an injector built with
// CUDA still loads on machines without CUPTI or a driver, and tests substitute
// a fake that fabricates activity records and callback data on a CPU.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace gcprof::inject::cuda {

class CuptiApi {
 public:
  virtual ~CuptiApi() = default;

  // False when the library could not be opened or lacks a required symbol;
  // unavailableReason() then says which and what to do.
  virtual bool available() const = 0;
  virtual const char* unavailableReason() const = 0;

  virtual CUptiResult getVersion(uint32_t* version) = 0;
  virtual const char* resultString(CUptiResult result) = 0;

  virtual CUptiResult subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                void* userdata) = 0;
  virtual CUptiResult unsubscribe(CUpti_SubscriberHandle subscriber) = 0;
  virtual CUptiResult enableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                     CUpti_CallbackDomain domain, CUpti_CallbackId cbid) = 0;

  virtual CUptiResult registerTimestampCallback(CUpti_TimestampCallbackFunc func) = 0;
  virtual CUptiResult getTimestamp(uint64_t* timestamp) = 0;

  virtual CUptiResult activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                CUpti_BuffersCallbackCompleteFunc completed) = 0;
  virtual CUptiResult activityEnable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult activityDisable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult activityFlushAll(uint32_t flag) = 0;
  virtual CUptiResult activityFlushPeriod(uint32_t period_ms) = 0;
  virtual CUptiResult activityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                            CUpti_Activity** record) = 0;
  virtual CUptiResult activityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                   size_t* dropped) = 0;

  virtual CUptiResult getDeviceId(CUcontext context, uint32_t* device_id) = 0;
  virtual CUptiResult getStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread_stream,
                                    uint32_t* stream_id) = 0;
};

}  // namespace gcprof::inject::cuda

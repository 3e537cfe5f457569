#include "cupti_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gcprof::inject::cuda {
namespace {

// Sonames first (already loaded, LD_LIBRARY_PATH, ld.so.cache), then the
// toolkit cmake found at build time, then the usual toolkit places.
const char* const kSonames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
const char* const kPaths[] = {
#ifdef GCPROF_CUPTI_BUILD_PATH
    GCPROF_CUPTI_BUILD_PATH,
#endif
    "/usr/local/cuda/lib64/libcupti.so",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
};

template <typename Fn>
bool bind(void* handle, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return fn != nullptr;
}

}  // namespace

CuptiLibrary::CuptiLibrary() {
  if (open()) available_ = resolve();
}

bool CuptiLibrary::open() {
  if (const char* forced = std::getenv("GCPROF_CUPTI_LIB"); forced && *forced) {
    handle_ = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      std::snprintf(reason_, sizeof reason_, "GCPROF_CUPTI_LIB=%s cannot be opened (%s)", forced,
                    dlerror());
      return false;
    }
    std::snprintf(path_, sizeof path_, "%s", forced);
    return true;
  }
  for (const char* name : kSonames) {
    if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD))) {
      std::snprintf(path_, sizeof path_, "%s (already loaded)", name);
      return true;
    }
  }
  for (const char* name : kSonames) {
    if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
      std::snprintf(path_, sizeof path_, "%s", name);
      return true;
    }
  }
  for (const char* name : kPaths) {
    if ((handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL))) {
      std::snprintf(path_, sizeof path_, "%s", name);
      return true;
    }
  }
  std::snprintf(reason_, sizeof reason_,
                "libcupti.so not found (install the CUDA toolkit's CUPTI or set "
                "GCPROF_CUPTI_LIB=/path/to/libcupti.so)");
  return false;
}

bool CuptiLibrary::resolve() {
  const char* missing = nullptr;
#define GCPROF_REQUIRE(member, symbol) \
  if (!missing && !bind(handle_, #symbol, member)) missing = #symbol
  GCPROF_REQUIRE(getVersion_, cuptiGetVersion);
  GCPROF_REQUIRE(getResultString_, cuptiGetResultString);
  GCPROF_REQUIRE(subscribe_, cuptiSubscribe);
  GCPROF_REQUIRE(unsubscribe_, cuptiUnsubscribe);
  GCPROF_REQUIRE(enableCallback_, cuptiEnableCallback);
  GCPROF_REQUIRE(getTimestamp_, cuptiGetTimestamp);
  GCPROF_REQUIRE(activityRegisterCallbacks_, cuptiActivityRegisterCallbacks);
  GCPROF_REQUIRE(activityEnable_, cuptiActivityEnable);
  GCPROF_REQUIRE(activityDisable_, cuptiActivityDisable);
  GCPROF_REQUIRE(activityFlushAll_, cuptiActivityFlushAll);
  GCPROF_REQUIRE(activityGetNextRecord_, cuptiActivityGetNextRecord);
  GCPROF_REQUIRE(activityGetNumDroppedRecords_, cuptiActivityGetNumDroppedRecords);
  GCPROF_REQUIRE(getDeviceId_, cuptiGetDeviceId);
#undef GCPROF_REQUIRE
  if (missing) {
    // Truncating a long path is fine for a one-line message.
    int n = std::snprintf(reason_, sizeof reason_, "%.300s lacks %s", path_, missing);
    if (n > 0 && static_cast<size_t>(n) < sizeof reason_)
      std::snprintf(reason_ + n, sizeof reason_ - n, " (CUPTI too old; CUDA 11.8 or newer needed)");
    return false;
  }
  // Newer CUPTIs only; the backend works around their absence.
  bind(handle_, "cuptiActivityRegisterTimestampCallback", registerTimestampCallback_);
  bind(handle_, "cuptiActivityFlushPeriod", activityFlushPeriod_);
  bind(handle_, "cuptiGetStreamIdEx", getStreamIdEx_);
  return true;
}

CUptiResult CuptiLibrary::getVersion(uint32_t* version) { return getVersion_(version); }

const char* CuptiLibrary::resultString(CUptiResult result) {
  const char* s = nullptr;
  if (!getResultString_ || getResultString_(result, &s) != CUPTI_SUCCESS || !s)
    return "unknown CUPTI error";
  return s;
}

CUptiResult CuptiLibrary::subscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  return subscribe_(subscriber, callback, userdata);
}

CUptiResult CuptiLibrary::unsubscribe(CUpti_SubscriberHandle subscriber) {
  return unsubscribe_(subscriber);
}

CUptiResult CuptiLibrary::enableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return enableCallback_(enable, subscriber, domain, cbid);
}

CUptiResult CuptiLibrary::registerTimestampCallback(CUpti_TimestampCallbackFunc func) {
  return registerTimestampCallback_ ? registerTimestampCallback_(func) : CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult CuptiLibrary::getTimestamp(uint64_t* timestamp) { return getTimestamp_(timestamp); }

CUptiResult CuptiLibrary::activityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed) {
  return activityRegisterCallbacks_(requested, completed);
}

CUptiResult CuptiLibrary::activityEnable(CUpti_ActivityKind kind) { return activityEnable_(kind); }

CUptiResult CuptiLibrary::activityDisable(CUpti_ActivityKind kind) {
  return activityDisable_(kind);
}

CUptiResult CuptiLibrary::activityFlushAll(uint32_t flag) { return activityFlushAll_(flag); }

CUptiResult CuptiLibrary::activityFlushPeriod(uint32_t period_ms) {
  return activityFlushPeriod_ ? activityFlushPeriod_(period_ms) : CUPTI_ERROR_NOT_SUPPORTED;
}

CUptiResult CuptiLibrary::activityGetNextRecord(uint8_t* buffer, size_t valid_bytes,
                                                CUpti_Activity** record) {
  return activityGetNextRecord_(buffer, valid_bytes, record);
}

CUptiResult CuptiLibrary::activityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                       size_t* dropped) {
  return activityGetNumDroppedRecords_(context, stream_id, dropped);
}

CUptiResult CuptiLibrary::getDeviceId(CUcontext context, uint32_t* device_id) {
  return getDeviceId_(context, device_id);
}

CUptiResult CuptiLibrary::getStreamIdEx(CUcontext context, CUstream stream,
                                        uint8_t per_thread_stream, uint32_t* stream_id) {
  return getStreamIdEx_ ? getStreamIdEx_(context, stream, per_thread_stream, stream_id)
                        : CUPTI_ERROR_NOT_SUPPORTED;
}

}  // namespace gcprof::inject::cuda

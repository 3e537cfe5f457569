#include "late_start.h"

#include <dlfcn.h>

#include <cstdio>

#include "cuda_backend.h"
#include "cupti_library.h"
#include "hook_guard.h"
#include "recorder.h"

namespace gcprof::inject::cuda {
namespace {

CudaBackend* g_backend = nullptr;  // leaked on purpose, as cuda_injection.cpp's

// The driver the job loaded; nullptr when it has none (RTLD_NOLOAD never loads).
void* loadedDriver() { return dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD); }

// The context-created callback that marks a recorded run "cuda" fired long
// ago in a job we attach to: a primary context that is active already says
// the same. The driver's functions are called through dlsym so that the
// injector links no libcuda (a CPU machine has none).
bool contextActive(void* driver) {
  using DeviceCount = int (*)(int*);
  using PrimaryState = int (*)(int, unsigned*, int*);
  auto count = reinterpret_cast<DeviceCount>(dlsym(driver, "cuDeviceGetCount"));
  auto state = reinterpret_cast<PrimaryState>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
  int devices = 0;
  if (!count || !state || count(&devices) != 0) return false;  // 0: CUDA_SUCCESS
  for (int d = 0; d < devices; ++d) {
    unsigned flags = 0;
    int active = 0;
    if (state(d, &flags, &active) == 0 && active) return true;
  }
  return false;
}

}  // namespace

LateStart startInRunningJob(char* reason, size_t reason_size) {
  HookGuard guard;
  void* driver = loadedDriver();
  if (!driver) return LateStart::NoCuda;
  if (g_backend) {
    std::snprintf(reason, reason_size, "the CUDA backend was started in this job before");
    dlclose(driver);
    return LateStart::Failed;
  }
  auto* library = new CuptiLibrary();
  auto* backend = new CudaBackend(*library);
  if (!backend->start()) {
    std::snprintf(reason, reason_size, "%s", backend->failure());
    dlclose(driver);
    return LateStart::Failed;
  }
  g_backend = backend;
  if (contextActive(driver)) setBackend("cuda");
  dlclose(driver);  // the job's own reference keeps it loaded
  return LateStart::Started;
}

void flushInRunningJob() {
  if (!g_backend) return;
  HookGuard guard;
  g_backend->flush();
}

void stopInRunningJob() {
  if (!g_backend) return;
  HookGuard guard;
  g_backend->stop();
}

}  // namespace gcprof::inject::cuda

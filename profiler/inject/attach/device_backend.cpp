#include "attach/device_backend.h"

#ifdef GCPROF_WITH_CUDA
#include "late_start.h"
#endif

namespace gcprof::inject::attach {

#ifdef GCPROF_WITH_CUDA

std::string startDeviceBackend(const std::string& backend, std::string& why) {
  if (backend == "host") return "none";
  char reason[512] = {0};
  switch (cuda::startInRunningJob(reason, sizeof reason)) {
    case cuda::LateStart::Started: return "on";
    case cuda::LateStart::NoCuda:
      if (backend == "cuda") {
        why = "the job has not loaded the CUDA driver (libcuda.so.1): it runs on the CPU";
        return "off";
      }
      return "none";
    case cuda::LateStart::Failed: break;
  }
  why = reason;
  return "off";
}

void flushDeviceBackend() { cuda::flushInRunningJob(); }
void stopDeviceBackend() { cuda::stopInRunningJob(); }

#else

std::string startDeviceBackend(const std::string& backend, std::string& why) {
  if (backend != "cuda") return "none";
  why = "this gcprof was built without the CUDA backend (no CUDA toolkit with CUPTI at build time)";
  return "off";
}

void flushDeviceBackend() {}
void stopDeviceBackend() {}

#endif

}  // namespace gcprof::inject::attach

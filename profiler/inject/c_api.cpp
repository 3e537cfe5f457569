// The exported C API (profiler/include/gcprof/gcprof.h) and the flat symbols
// the python shim binds with ctypes.
#define GCPROF_INJECTOR_BUILD 1
#include "gcprof/gcprof.h"
#include "name_table.h"
#include "recorder.h"
#include "trace.h"

using namespace gcprof::inject;

namespace {
int domainOf(int phase) {
  return static_cast<int>(phase == GCPROF_USER ? gcprof::RangeDomain::User
                                               : gcprof::RangeDomain::Module);
}
}  // namespace

extern "C" {
#define GCPROF_EXPORT __attribute__((visibility("default")))

GCPROF_EXPORT uint64_t gcprof_inject_range_start(const char* name, int phase) {
  return rangeStart(name, phase, domainOf(phase));
}
// For the C++ module hooks (profiler/backward_hooks), not the public API: a
// module's name interned once (a stable pointer, equal for equal names), then
// a range started with it at each call, without hashing the name again.
GCPROF_EXPORT const char* gcprof_inject_intern(const char* name) { return internName(name); }
GCPROF_EXPORT uint64_t gcprof_inject_range_start_interned(const char* interned, int phase) {
  return rangeStartInterned(interned, phase, domainOf(phase));
}
GCPROF_EXPORT void gcprof_inject_range_end(uint64_t id) { rangeEnd(id); }
GCPROF_EXPORT void gcprof_inject_range_io(uint64_t id, int64_t in, int64_t out) {
  rangeIO(id, in, out);
}
// range_io then range_end in one call: the python shim ends every module
// forward this way, and a ctypes call costs about as much as the rest of it.
GCPROF_EXPORT void gcprof_inject_range_end_io(uint64_t id, int64_t in, int64_t out) {
  rangeIO(id, in, out);
  rangeEnd(id);
}
GCPROF_EXPORT void gcprof_inject_step_begin(int64_t step) { stepBegin(step); }
GCPROF_EXPORT void gcprof_inject_step_end(void) { stepEnd(); }
GCPROF_EXPORT void gcprof_inject_scalar(const char* name, double value) { scalar(name, value); }
GCPROF_EXPORT void gcprof_inject_set_runtime(const char* name) { setRuntime(name); }
GCPROF_EXPORT int gcprof_inject_active(void) { return active() ? 1 : 0; }
// Device memory an allocator of the job's own reports (PyTorch's caching
// allocator through profiler/allocator_trace): recorded whatever --min-bytes
// says, as all device memory. Called under that allocator's lock: only
// appends to the calling thread's buffer.
GCPROF_EXPORT void gcprof_inject_device_alloc(uint64_t addr, int64_t bytes, int device, int64_t stream,
                                              int kind, int api) {
  recordAlloc(addr, bytes, api, device, stream, kind, true);
}
GCPROF_EXPORT void gcprof_inject_device_free(uint64_t addr, int device, int kind) {
  recordFree(addr, device, 0, kind);
}

GCPROF_EXPORT const gcprof_api_v1* gcprof_get_api_v1(void) {
  static const gcprof_api_v1 api = {gcprof_inject_range_start, gcprof_inject_range_end,
                                    gcprof_inject_step_begin, gcprof_inject_step_end,
                                    gcprof_inject_scalar};
  return &api;
}
}

// libgcprof_allocator_trace.so: attaches a trace tracker to PyTorch's native
// CUDA caching allocator and hands its events to the injector's C API
// (gcprof_inject_device_alloc / _free, found in the process at attach time).
// From c10's DeviceCachingAllocator::record_trace: trackers are called for
// every allocator event, under the device allocator's lock, with a TraceEntry
// already built; so the callback only translates and appends to the calling
// thread's buffer (no allocation, no lock, no GIL). NativeCachingAllocator
// forwards attachAllocatorTraceTracker only to the device allocators that
// exist, which CUDA's lazy initialisation creates: attach after it
// (torch.cuda._lazy_call), or nothing is ever reported.
#include <c10/cuda/CUDACachingAllocator.h>
#include <dlfcn.h>

#include <atomic>
#include <string>

#include "allocator_events.h"
#include "c10_record.h"

namespace {

using AllocFn = void (*)(uint64_t addr, int64_t bytes, int device, int64_t stream, int kind, int api);
using FreeFn = void (*)(uint64_t addr, int device, int kind);

// The api code of these allocations (docs/schema.md, allocations.api).
constexpr int kApiC10CachingAllocator = 25;

class InjectorSink : public gcprof::allocator_trace::DeviceMemorySink {
 public:
  InjectorSink(AllocFn a, FreeFn f) : alloc_(a), free_(f) {}
  void allocate(uint64_t addr, int64_t bytes, int device, int64_t stream, int kind) override {
    alloc_(addr, bytes, device, stream, kind, kApiC10CachingAllocator);
  }
  void release(uint64_t addr, int device, int kind) override { free_(addr, device, kind); }

 private:
  AllocFn alloc_;
  FreeFn free_;
};

}  // namespace

// 1 when attached (now or by an earlier call: once per process, however
// many of the python shim and the injector ask); 0 when the injector is not
// in the process (an unrecorded job), PyTorch's allocator is not the native
// one, or it has no device allocators yet (CUDA not initialised: ask again
// later). Never throws: its callers are a CUDA API callback and python's
// queued CUDA initialisation calls, where an exception would break the job.
extern "C" __attribute__((visibility("default"))) int gcprof_attach_allocator_trace(int with_segments) {
  static std::atomic<int> state{0};  // 0 idle, 1 attaching, 2 attached
  if (state.load(std::memory_order_acquire) == 2) return 1;
  int idle = 0;
  // Another thread attaching holds device locks we would wait on: never block.
  if (!state.compare_exchange_strong(idle, 1, std::memory_order_acq_rel)) return 0;
  int attached = 0;
  try {
    auto alloc = reinterpret_cast<AllocFn>(dlsym(RTLD_DEFAULT, "gcprof_inject_device_alloc"));
    auto release = reinterpret_cast<FreeFn>(dlsym(RTLD_DEFAULT, "gcprof_inject_device_free"));
    auto* allocator = c10::cuda::CUDACachingAllocator::get();
    if (alloc && release && allocator && allocator->name() == std::string("native") &&
        allocator->initialized()) {
      static InjectorSink sink(alloc, release);  // lives as long as the allocator
      bool segments = with_segments != 0;
      c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(
          [segments](const c10::CachingDeviceAllocator::TraceEntry& e) {
            gcprof::allocator_trace::deliver(gcprof::allocator_trace::recordOf(e), sink, segments);
          });
      attached = 1;
    }
  } catch (...) {
    attached = 0;
  }
  state.store(attached ? 2 : 0, std::memory_order_release);
  return attached;
}

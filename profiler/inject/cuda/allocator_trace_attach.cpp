#include "allocator_trace_attach.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace gcprof::inject::cuda {
namespace {

// Tries before giving up: a job that loads libc10_cuda.so but whose
// allocator is not the native one (or never initialises) stops paying the
// dlopen probe after these.
constexpr int kMaxTries = 64;

std::atomic<bool> g_settled{false};
std::atomic<int> g_tries{0};

bool wanted() {
  const char* off = getenv("GCPROF_ALLOCATOR_TRACE");
  if (off && strcmp(off, "0") == 0) return false;
  // Under backend:cudaMallocAsync every tensor is a cudaMallocAsync CUPTI sees.
  const char* conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
  return !(conf && strstr(conf, "cudaMallocAsync"));
}

// The tracker library beside this injector (build/lib or the installed libdir).
std::string trackerLibrary() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&maybeAttachAllocatorTrace), &info) || !info.dli_fname) return {};
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) +
         "/libgcprof_allocator_trace.so";
}

bool attachNow() {
#ifdef GCPROF_C10_CUDA_PATH
  // Only the exact library the tracker was linked against: another torch's
  // c10 would be called with this one's object layouts.
  void* c10 = dlopen(GCPROF_C10_CUDA_PATH, RTLD_LAZY | RTLD_NOLOAD);
  if (!c10) return false;
  dlclose(c10);
  std::string path = trackerLibrary();
  void* lib = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    g_settled.store(true);  // not built here: nothing to retry
    return false;
  }
  auto attach = reinterpret_cast<int (*)(int)>(dlsym(lib, "gcprof_attach_allocator_trace"));
  return attach && attach(1) == 1;
#else
  g_settled.store(true);
  return false;
#endif
}

}  // namespace

void maybeAttachAllocatorTrace() {
  if (g_settled.load(std::memory_order_relaxed)) return;
  if (g_tries.fetch_add(1, std::memory_order_relaxed) >= kMaxTries || !wanted()) {
    g_settled.store(true);
    return;
  }
  if (attachNow()) g_settled.store(true);
}

}  // namespace gcprof::inject::cuda

// Allocation hooks of an attached process (alloc_hooks.h); what each reports
// is allocation_reports.h's, as under `record`.
#include "attach/alloc_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>

#include "allocation_reports.h"

namespace gcprof::inject::attach {
namespace {

using gcprof::AllocApi;

RealAllocator g_real;

void* hookMalloc(size_t n) {
  void* p = g_real.malloc(n);
  reportAlloc(p, n, AllocApi::Malloc);
  return p;
}

void hookFree(void* p) {
  reportFree(g_real, p);
  g_real.free(p);
}

void* hookCalloc(size_t n, size_t size) {
  void* p = g_real.calloc(n, size);
  reportAlloc(p, n * size, AllocApi::Calloc);
  return p;
}

void* hookRealloc(void* old, size_t n) {
  if (!old) {
    void* p = g_real.realloc(old, n);
    reportAlloc(p, n, AllocApi::Realloc);
    return p;
  }
  return reportedRealloc(g_real, old, n);
}

int hookPosixMemalign(void** out, size_t align, size_t n) {
  int rc = g_real.posix_memalign(out, align, n);
  if (rc == 0) reportAlloc(*out, n, AllocApi::PosixMemalign);
  return rc;
}

void* hookAlignedAlloc(size_t align, size_t n) {
  void* p = g_real.aligned_alloc(align, n);
  reportAlloc(p, n, AllocApi::AlignedAlloc);
  return p;
}

void* hookMemalign(size_t align, size_t n) {
  void* p = g_real.memalign(align, n);
  reportAlloc(p, n, AllocApi::Memalign);
  return p;
}

void* hookValloc(size_t n) {
  void* p = g_real.valloc(n);
  reportAlloc(p, n, AllocApi::Valloc);
  return p;
}

void* hookPvalloc(size_t n) {
  void* p = g_real.pvalloc(n);
  reportAlloc(p, n, AllocApi::Pvalloc);
  return p;
}

template <typename F>
bool find(F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return slot != nullptr;
}

// `real` of each is set by resolveAllocator.
GotHook g_hooks[] = {
    {"free", reinterpret_cast<void*>(hookFree), true},
    {"malloc", reinterpret_cast<void*>(hookMalloc)},
    {"calloc", reinterpret_cast<void*>(hookCalloc)},
    {"realloc", reinterpret_cast<void*>(hookRealloc)},
    {"posix_memalign", reinterpret_cast<void*>(hookPosixMemalign)},
    {"aligned_alloc", reinterpret_cast<void*>(hookAlignedAlloc)},
    {"memalign", reinterpret_cast<void*>(hookMemalign)},
    {"valloc", reinterpret_cast<void*>(hookValloc)},
    {"pvalloc", reinterpret_cast<void*>(hookPvalloc)},
};

bool resolveHooks() {
  for (GotHook& h : g_hooks)
    if (!(h.real = dlsym(RTLD_DEFAULT, h.symbol))) return false;
  return true;
}

}  // namespace

bool resolveAllocator() {
  bool found = find(g_real.malloc, "malloc") && find(g_real.free, "free") &&
               find(g_real.calloc, "calloc") && find(g_real.realloc, "realloc") &&
               find(g_real.posix_memalign, "posix_memalign") &&
               find(g_real.aligned_alloc, "aligned_alloc") && find(g_real.memalign, "memalign") &&
               find(g_real.valloc, "valloc") && find(g_real.pvalloc, "pvalloc") &&
               find(g_real.usable_size, "malloc_usable_size") && resolveHooks();
  g_real.glibc_chunks = found && glibcChunks(g_real);
  return found;
}

const GotHook* allocationHooks(size_t* count) {
  *count = sizeof g_hooks / sizeof g_hooks[0];
  return g_hooks;
}

}  // namespace gcprof::inject::attach

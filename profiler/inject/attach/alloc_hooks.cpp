// Allocation hooks of an attached process (alloc_hooks.h). A block allocated
// before attach and freed now is not in the live-address set: its free costs
// one probe and is ignored, never reported.
#include "attach/alloc_hooks.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>

#include "config.h"
#include "hook_guard.h"
#include "recorder.h"
#include "trace.h"

namespace gcprof::inject::attach {
namespace {

using gcprof::AllocApi;

struct Real {
  void* (*malloc)(size_t);
  void (*free)(void*);
  void* (*calloc)(size_t, size_t);
  void* (*realloc)(void*, size_t);
  int (*posix_memalign)(void**, size_t, size_t);
  void* (*aligned_alloc)(size_t, size_t);
  void* (*memalign)(size_t, size_t);
  void* (*valloc)(size_t);
  void* (*pvalloc)(size_t);
  size_t (*usable_size)(void*);
};
Real g_real;

inline void reportAlloc(void* p, size_t n, AllocApi api) {
  if (!p || t_in_gcprof) return;
  HookGuard g;
  recordAlloc(reinterpret_cast<uint64_t>(p), static_cast<int64_t>(n), static_cast<int>(api));
}

// Before the real free, so that the address cannot be handed out (and
// reported) by another thread in between; small blocks were never recorded.
inline void reportFree(void* p) {
  if (!p || t_in_gcprof) return;
  if (static_cast<int64_t>(g_real.usable_size(p)) < config().min_bytes) return;
  HookGuard g;
  recordFree(reinterpret_cast<uint64_t>(p));
}

void* hookMalloc(size_t n) {
  void* p = g_real.malloc(n);
  reportAlloc(p, n, AllocApi::Malloc);
  return p;
}

void hookFree(void* p) {
  reportFree(p);
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
  size_t old_size = g_real.usable_size(old);
  reportFree(old);
  void* p = g_real.realloc(old, n);
  if (p) reportAlloc(p, n, AllocApi::Realloc);
  // A failed realloc leaves the old block live (it is recorded again as a
  // block of its usable size, as malloc_hooks.cpp does).
  else if (n > 0 && old_size >= static_cast<size_t>(config().min_bytes))
    reportAlloc(old, old_size, AllocApi::Realloc);
  return p;
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

const GotHook kHooks[] = {
    {"malloc", reinterpret_cast<void*>(hookMalloc)},
    {"free", reinterpret_cast<void*>(hookFree)},
    {"calloc", reinterpret_cast<void*>(hookCalloc)},
    {"realloc", reinterpret_cast<void*>(hookRealloc)},
    {"posix_memalign", reinterpret_cast<void*>(hookPosixMemalign)},
    {"aligned_alloc", reinterpret_cast<void*>(hookAlignedAlloc)},
    {"memalign", reinterpret_cast<void*>(hookMemalign)},
    {"valloc", reinterpret_cast<void*>(hookValloc)},
    {"pvalloc", reinterpret_cast<void*>(hookPvalloc)},
};

}  // namespace

bool resolveAllocator() {
  return find(g_real.malloc, "malloc") && find(g_real.free, "free") &&
         find(g_real.calloc, "calloc") && find(g_real.realloc, "realloc") &&
         find(g_real.posix_memalign, "posix_memalign") &&
         find(g_real.aligned_alloc, "aligned_alloc") && find(g_real.memalign, "memalign") &&
         find(g_real.valloc, "valloc") && find(g_real.pvalloc, "pvalloc") &&
         find(g_real.usable_size, "malloc_usable_size");
}

const GotHook* allocationHooks(size_t* count) {
  *count = sizeof kHooks / sizeof kHooks[0];
  return kHooks;
}

}  // namespace gcprof::inject::attach

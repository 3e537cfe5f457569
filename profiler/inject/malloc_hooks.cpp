// Interposed C allocation functions (LD_PRELOAD). Each hook: resolve the real
// function, call it, report. dlsym itself calls calloc, so the first calls
// are served from a small static pool until the real functions are known.
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>

#include "config.h"
#include "hook_guard.h"
#include "recorder.h"
#include "trace.h"

namespace gcprof::inject {

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
std::atomic<int> g_resolved{0};  // 0 no, 1 resolving, 2 done

alignas(64) char g_pool[64 * 1024];
std::atomic<size_t> g_pool_used{0};

bool inPool(void* p) { return p >= g_pool && p < g_pool + sizeof g_pool; }

void* poolAlloc(size_t n) {
  size_t need = (n + 15) & ~size_t{15};
  size_t at = g_pool_used.fetch_add(need);
  return at + need <= sizeof g_pool ? g_pool + at : nullptr;
}

template <typename F>
void resolve1(F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

void resolve() {
  int expected = 0;
  if (!g_resolved.compare_exchange_strong(expected, 1)) return;
  resolve1(g_real.malloc, "malloc");
  resolve1(g_real.free, "free");
  resolve1(g_real.calloc, "calloc");
  resolve1(g_real.realloc, "realloc");
  resolve1(g_real.posix_memalign, "posix_memalign");
  resolve1(g_real.aligned_alloc, "aligned_alloc");
  resolve1(g_real.memalign, "memalign");
  resolve1(g_real.valloc, "valloc");
  resolve1(g_real.pvalloc, "pvalloc");
  resolve1(g_real.usable_size, "malloc_usable_size");
  g_resolved.store(2);
}

inline bool ready() {
  if (__builtin_expect(g_resolved.load(std::memory_order_acquire) == 2, 1)) return true;
  resolve();
  return g_resolved.load(std::memory_order_acquire) == 2;
}

inline void reportAlloc(void* p, size_t n, AllocApi api) {
  if (!p || t_in_gcprof) return;
  HookGuard g;
  recordAlloc(reinterpret_cast<uint64_t>(p), static_cast<int64_t>(n), static_cast<int>(api));
}

// Reported before the real free so the address cannot be handed out again
// (and reported by another thread) in between. Blocks smaller than
// --min-bytes were never recorded: one header read skips them.
inline void reportFree(void* p) {
  if (!p || t_in_gcprof) return;
  if (g_real.usable_size &&
      static_cast<int64_t>(g_real.usable_size(p)) < config().min_bytes)
    return;
  HookGuard g;
  recordFree(reinterpret_cast<uint64_t>(p));
}

}  // namespace
}  // namespace gcprof::inject

using namespace gcprof::inject;

extern "C" {

__attribute__((visibility("default"))) void* malloc(size_t n) {
  if (!ready()) return poolAlloc(n);
  void* p = g_real.malloc(n);
  reportAlloc(p, n, AllocApi::Malloc);
  return p;
}

__attribute__((visibility("default"))) void free(void* p) {
  if (!p || inPool(p)) return;
  if (!ready()) return;  // cannot happen: only the pool hands out memory before
  reportFree(p);
  g_real.free(p);
}

__attribute__((visibility("default"))) void* calloc(size_t n, size_t size) {
  if (!ready()) {
    void* p = poolAlloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
  }
  void* p = g_real.calloc(n, size);
  reportAlloc(p, n * size, AllocApi::Calloc);
  return p;
}

__attribute__((visibility("default"))) void* realloc(void* old, size_t n) {
  if (!ready() || inPool(old)) {
    void* p = ready() ? g_real.malloc(n) : poolAlloc(n);
    // Pool blocks are never freed; copy no further than the pool's end.
    if (p && old) memcpy(p, old, std::min<size_t>(n, g_pool + sizeof g_pool - static_cast<char*>(old)));
    return p;
  }
  // The free is reported first so that no other thread can be handed the
  // address and report it before us; a call that fails leaves the old block
  // live, so it is reported again (as a block of its usable size).
  size_t old_size = g_real.usable_size ? g_real.usable_size(old) : 0;
  reportFree(old);
  void* p = g_real.realloc(old, n);
  if (p) reportAlloc(p, n, AllocApi::Realloc);
  else if (n > 0 && old_size >= static_cast<size_t>(config().min_bytes)) reportAlloc(old, old_size, AllocApi::Realloc);
  return p;
}

__attribute__((visibility("default"))) int posix_memalign(void** out, size_t align, size_t n) {
  if (!ready()) return ENOMEM;
  int rc = g_real.posix_memalign(out, align, n);
  if (rc == 0) reportAlloc(*out, n, AllocApi::PosixMemalign);
  return rc;
}

__attribute__((visibility("default"))) void* aligned_alloc(size_t align, size_t n) {
  if (!ready()) return nullptr;
  void* p = g_real.aligned_alloc(align, n);
  reportAlloc(p, n, AllocApi::AlignedAlloc);
  return p;
}

__attribute__((visibility("default"))) void* memalign(size_t align, size_t n) {
  if (!ready()) return nullptr;
  void* p = g_real.memalign(align, n);
  reportAlloc(p, n, AllocApi::Memalign);
  return p;
}

__attribute__((visibility("default"))) void* valloc(size_t n) {
  if (!ready()) return nullptr;
  void* p = g_real.valloc(n);
  reportAlloc(p, n, AllocApi::Valloc);
  return p;
}

__attribute__((visibility("default"))) void* pvalloc(size_t n) {
  if (!ready()) return nullptr;
  void* p = g_real.pvalloc(n);
  reportAlloc(p, n, AllocApi::Pvalloc);
  return p;
}

}  // extern "C"

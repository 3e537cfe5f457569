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

#include "allocation_reports.h"

namespace gcprof::inject {

namespace {

using gcprof::AllocApi;

RealAllocator g_real;
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
  g_real.glibc_chunks = glibcChunks(g_real);
  g_resolved.store(2);
}

inline bool ready() {
  if (__builtin_expect(g_resolved.load(std::memory_order_acquire) == 2, 1)) return true;
  resolve();
  return g_resolved.load(std::memory_order_acquire) == 2;
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
  reportFree(g_real, p);
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
  return reportedRealloc(g_real, old, n);
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

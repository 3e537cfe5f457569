// The C allocator's real functions and what a hook reports around them: one
// place for the interposed hooks of `record` (malloc_hooks.cpp, LD_PRELOAD)
// and the GOT hooks of `attach` (attach/alloc_hooks.cpp).
#pragma once

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "config.h"
#include "hook_guard.h"
#include "recorder.h"
#include "recording_state.h"
#include "thread_state.h"
#include "trace.h"

namespace gcprof::inject {

struct RealAllocator {
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
  // malloc and free are glibc's own (see glibcChunks): a block's size can be
  // read from the word before it. No initializer: the hooks' RealAllocator
  // must stay trivial, zeroed before any code runs. A constructor would run
  // after the job's first malloc had filled it in, and undo that.
  bool glibc_chunks;
};
static_assert(std::is_trivially_default_constructible_v<RealAllocator>);

// Whether `real` is glibc's allocator, not another one (jemalloc, tcmalloc,
// glibc's malloc-debug library) loaded in between: glibc exports its
// functions under __libc_ names too. Calls dlsym: only where it may be called
// (resolving the real functions, not inside a hook).
inline bool glibcChunks(const RealAllocator& real) {
  return real.malloc && real.free && real.calloc && real.realloc &&
         reinterpret_cast<void*>(real.malloc) == dlsym(RTLD_DEFAULT, "__libc_malloc") &&
         reinterpret_cast<void*>(real.free) == dlsym(RTLD_DEFAULT, "__libc_free") &&
         reinterpret_cast<void*>(real.calloc) == dlsym(RTLD_DEFAULT, "__libc_calloc") &&
         reinterpret_cast<void*>(real.realloc) == dlsym(RTLD_DEFAULT, "__libc_realloc");
}

// At least the usable size of a block the real allocator handed out, for the
// free hook's "was it ever recorded" test. glibc keeps the block's chunk size
// (its low three bits are flags) in the word before it; the usable size is
// that less one word (two for an mmap'ed chunk). Read inline: a call to
// malloc_usable_size on each of a job's frees (~21,000 a step of a small
// GPT) was ~0.6% of its CPU, and glibc's free reads that word next anyway.
inline size_t usableSizeBound(const RealAllocator& real, void* p) {
  if (real.glibc_chunks) return (static_cast<const size_t*>(p)[-1] & ~size_t{7}) - sizeof(size_t);
  return real.usable_size ? real.usable_size(p) : INT64_MAX;
}

inline void reportAlloc(void* p, size_t n, gcprof::AllocApi api) {
  if (!p || t_in_gcprof) return;
  // Most of a job's calls (~21,000 a step of a small GPT) are below
  // --min-bytes and only counted: inline, without a call into the recorder.
  ThreadState* ts = t_thread_state;
  if (ts && static_cast<int64_t>(n) < config().min_bytes) {
    if (recording()) ts->countSmall(static_cast<int64_t>(n));
    return;
  }
  HookGuard g;
  recordAlloc(reinterpret_cast<uint64_t>(p), static_cast<int64_t>(n), static_cast<int>(api));
}

// Reported before the real free so the address cannot be handed out again
// (and reported by another thread) in between. Blocks smaller than
// --min-bytes were never recorded: one header read skips them (and lets
// through a few just under it, in a chunk as large as a recorded block's).
// Under `record` the writer matches what passes, and counts a free it cannot
// match (runs.unmatched_frees); when attached, a block from before attach is
// not in the live set: its free costs one probe and is ignored.
inline void reportFree(const RealAllocator& real, void* p) {
  if (!p || (t_in_gcprof && !t_frees_are_the_jobs)) return;
  if (static_cast<int64_t>(usableSizeBound(real, p)) < config().min_bytes) return;
  HookGuard g;
  recordFree(reinterpret_cast<uint64_t>(p));
}

// realloc of a block (old != nullptr): the free is reported first (as
// above); a call that fails leaves the old block live, so it is reported
// again, as a block of its usable size.
inline void* reportedRealloc(const RealAllocator& real, void* old, size_t n) {
  size_t old_size = real.usable_size ? real.usable_size(old) : 0;
  reportFree(real, old);
  void* p = real.realloc(old, n);
  if (p) reportAlloc(p, n, gcprof::AllocApi::Realloc);
  else if (n > 0 && old_size >= static_cast<size_t>(config().min_bytes))
    reportAlloc(old, old_size, gcprof::AllocApi::Realloc);
  return p;
}

}  // namespace gcprof::inject

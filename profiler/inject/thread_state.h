// Per-thread event buffers: a single-producer/single-consumer ring that the
// owning thread fills and the writer thread drains. Allocated with mmap so
// that creating one never calls malloc (we are inside malloc when it happens).
//
// Memory stays bounded under thread churn: when a thread exits, its buffer
// goes to the next thread that starts, at once, with whatever the writer has
// not drained yet still in it (a Thread event in the ring says whose events
// follow). So there are never more buffers than threads alive at the same
// time, plus one shared buffer for what a thread allocates or frees after its
// exit handler ran (other libraries' thread-exit destructors).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "event.h"

namespace gcprof::inject {

constexpr uint32_t kRingEvents = 16384;  // 768 KiB per thread
constexpr int kMaxRangeDepth = 256;

struct ThreadState {
  // Ring: the producer owns `head`, the consumer owns `tail`.
  alignas(64) std::atomic<uint64_t> head{0};
  alignas(64) std::atomic<uint64_t> tail{0};
  alignas(64) int64_t tid = 0;  // the owning thread (producer side)
  int64_t drain_tid = 0;        // whose events the writer is draining (consumer side)
  // Counted-only allocations (below --min-bytes), summed by the writer.
  std::atomic<int64_t> small_allocs{0};
  std::atomic<int64_t> small_bytes{0};
  std::atomic<int64_t> dropped{0};
  // Open ranges of this thread, innermost last; start/end ranges may close
  // out of order, so an end removes its id wherever it is.
  uint64_t ranges[kMaxRangeDepth];
  int depth = 0;
  // 1 while the producer sleeps on a full ring (a futex word): the writer's
  // drain wakes it, so a stalled thread costs no CPU while it waits.
  std::atomic<uint32_t> room_wanted{0};
  std::atomic<bool> exited{false};  // its thread is gone: the next new thread takes it
  bool shared = false;              // the buffer of exited threads: producers take `lock`
  std::atomic<bool> lock{false};
  std::atomic<ThreadState*> next{nullptr};
  Event ring[kRingEvents];

  // Producer side. Returns false (and counts a drop) when the ring stays full
  // because the writer is gone.
  bool push(const Event& e);
  // Consumer side: copies out up to `max` events, stopping before the first
  // one (thread marks aside) stamped at or after `before`: what is younger
  // stays in the ring, so a storm's producers wait on it instead of the
  // writer holding it (docs/recording.md, "Cost").
  uint32_t drain(Event* out, uint32_t max, int64_t before = INT64_MAX);
  uint64_t currentRange() const { return depth > 0 ? ranges[depth - 1] : 0; }
  // Counts one allocation below --min-bytes: most of a job's malloc calls
  // (~38,000 per step of resnet18). The owning thread is the only one that
  // adds to its counters, so a load and a store do, without the locked
  // read-modify-write of fetch_add (two per call); the writer only reads
  // them. The shared buffer of exited threads has several producers.
  void countSmall(int64_t bytes) {
    if (__builtin_expect(shared, 0)) {
      small_allocs.fetch_add(1, std::memory_order_relaxed);
      small_bytes.fetch_add(bytes, std::memory_order_relaxed);
      return;
    }
    small_allocs.store(small_allocs.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    small_bytes.store(small_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
  }

  // push() without the shared buffer's lock: for the owning thread.
  bool pushOwned(const Event& e);

 private:
  // The ring is full at `h`: sleeps until the writer drains some (true), or
  // gives up when the writer is gone or stuck for kFullWaitNs (false).
  bool waitForRoom(uint64_t h);
};

// The writer thread's own events (the records a CUPTI flush delivers on
// it) never wait for room in its ring: it is the thread that makes room, and
// would wait on itself. Past a full ring they are kept here (bounded by
// CUPTI's buffers), and the writer takes them with the rings. Only the writer
// thread touches it.
void markWriterThread();
std::vector<Event>& writerOverflow();

// The calling thread's own state once it has one (nullptr before its first
// event and after its exit handler ran): read inline by the malloc hooks.
extern __thread ThreadState* t_thread_state __attribute__((tls_model("initial-exec")));
ThreadState* threadStateSlow();
// The calling thread's state, created (or taken over from an exited thread)
// on first use; after the thread's exit handler, the shared buffer. nullptr
// only when the system refuses memory. Creating it may allocate (call
// under a HookGuard).
inline ThreadState* threadState() {
  ThreadState* s = t_thread_state;
  return __builtin_expect(s != nullptr, 1) ? s : threadStateSlow();
}
// Head of the list of every state ever created (the writer walks it).
ThreadState* allThreadStates();
// How many states exist (tests and the bound in docs/recording.md).
int threadStateCount();

}  // namespace gcprof::inject

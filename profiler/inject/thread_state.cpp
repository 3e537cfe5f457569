#include "thread_state.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <new>

#include "writer.h"

namespace gcprof::inject {
namespace {

std::atomic<ThreadState*> g_states{nullptr};
__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void onThreadExit(void* p) {
  static_cast<ThreadState*>(p)->exited.store(true, std::memory_order_release);
}
void makeKey() { pthread_key_create(&g_exit_key, onThreadExit); }

// A state whose thread exited and whose events were all drained can be reused.
ThreadState* claimExited() {
  for (ThreadState* s = g_states.load(std::memory_order_acquire); s; s = s->next.load()) {
    bool exited = true;
    if (s->head.load(std::memory_order_acquire) == s->tail.load(std::memory_order_acquire) &&
        s->exited.compare_exchange_strong(exited, false)) {
      s->depth = 0;
      return s;
    }
  }
  return nullptr;
}

ThreadState* create() {
  ThreadState* s = claimExited();
  if (!s) {
    void* mem = mmap(nullptr, sizeof(ThreadState), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return nullptr;
    s = new (mem) ThreadState();
    ThreadState* head = g_states.load();
    do {
      s->next.store(head);
    } while (!g_states.compare_exchange_weak(head, s));
  }
  s->tid = syscall(SYS_gettid);
  pthread_once(&g_key_once, makeKey);
  pthread_setspecific(g_exit_key, s);
  return s;
}

}  // namespace

bool ThreadState::push(const Event& e) {
  uint64_t h = head.load(std::memory_order_relaxed);
  // Full: wait for the writer (backpressure keeps the trace complete), but
  // never forever: if the writer is gone, drop and count.
  for (int spins = 0; h - tail.load(std::memory_order_acquire) >= kRingEvents; ++spins) {
    if (!writerRunning() || spins > 20000) {
      dropped.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (spins < 64) {
      sched_yield();
    } else {
      timespec ts{0, 100000};
      nanosleep(&ts, nullptr);
    }
  }
  ring[h % kRingEvents] = e;
  head.store(h + 1, std::memory_order_release);
  return true;
}

uint32_t ThreadState::drain(Event* out, uint32_t max) {
  uint64_t t = tail.load(std::memory_order_relaxed);
  uint64_t h = head.load(std::memory_order_acquire);
  uint32_t n = 0;
  for (; t < h && n < max; ++t, ++n) out[n] = ring[t % kRingEvents];
  tail.store(t, std::memory_order_release);
  return n;
}

ThreadState* threadState() {
  if (!t_state) t_state = create();
  return t_state;
}

ThreadState* allThreadStates() { return g_states.load(std::memory_order_acquire); }

}  // namespace gcprof::inject

#include "thread_state.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <new>

#include "recorder.h"
#include "writer.h"

namespace gcprof::inject {

__thread ThreadState* t_thread_state __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

std::atomic<ThreadState*> g_states{nullptr};
std::atomic<int> g_count{0};
std::atomic<ThreadState*> g_shared{nullptr};
// Set by the exit handler: whatever this thread records from then on goes to
// the shared buffer (its own now belongs to the next thread).
__thread bool t_exited __attribute__((tls_model("initial-exec"))) = false;
__thread int64_t t_tid __attribute__((tls_model("initial-exec"))) = 0;
__thread bool t_writer __attribute__((tls_model("initial-exec"))) = false;
pthread_key_t g_exit_key;
pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

void onThreadExit(void* p) {
  t_exited = true;
  t_thread_state = nullptr;
  // Release: the next owner sees every event this thread pushed.
  static_cast<ThreadState*>(p)->exited.store(true, std::memory_order_release);
}
void makeKey() { pthread_key_create(&g_exit_key, onThreadExit); }

int64_t myTid() {
  if (!t_tid) t_tid = syscall(SYS_gettid);
  return t_tid;
}

ThreadState* claimExited() {
  for (ThreadState* s = g_states.load(std::memory_order_acquire); s; s = s->next.load()) {
    bool exited = true;
    if (!s->shared && s->exited.compare_exchange_strong(exited, false, std::memory_order_acquire)) {
      s->depth = 0;
      return s;
    }
  }
  return nullptr;
}

ThreadState* fresh() {
  void* mem = mmap(nullptr, sizeof(ThreadState), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  ThreadState* s = new (mem) ThreadState();
  ThreadState* head = g_states.load();
  do {
    s->next.store(head);
  } while (!g_states.compare_exchange_weak(head, s));
  g_count.fetch_add(1);
  return s;
}

Event threadMark(int64_t tid) {
  Event e{};
  e.type = EventType::Thread;
  e.a = static_cast<uint64_t>(tid);
  return e;
}

ThreadState* create() {
  ThreadState* s = claimExited();
  if (!s && !(s = fresh())) return nullptr;
  s->tid = myTid();
  s->pushOwned(threadMark(s->tid));
  pthread_once(&g_key_once, makeKey);
  pthread_setspecific(g_exit_key, s);
  return s;
}

ThreadState* shared() {
  ThreadState* s = g_shared.load(std::memory_order_acquire);
  if (s) return s;
  static std::atomic<bool> creating{false};
  static std::atomic<bool> made{false};
  if (creating.exchange(true)) {  // another exiting thread is making it
    while (!made.load(std::memory_order_acquire)) sched_yield();
    return g_shared.load(std::memory_order_acquire);
  }
  s = fresh();
  if (s) s->shared = true;
  g_shared.store(s, std::memory_order_release);
  made.store(true, std::memory_order_release);
  return s;
}

// A full ring waits this long for the writer before its events are dropped.
constexpr Ns kFullWaitNs = 10000000000;

void futexWait(std::atomic<uint32_t>& word, uint32_t expected, long timeout_ns) {
  timespec ts{timeout_ns / 1000000000L, timeout_ns % 1000000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

class SpinLock {
 public:
  explicit SpinLock(std::atomic<bool>& l) : l_(l) {
    while (l_.exchange(true, std::memory_order_acquire)) sched_yield();
  }
  ~SpinLock() { l_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool>& l_;
};

}  // namespace

bool ThreadState::push(const Event& e) {
  if (!shared) return pushOwned(e);
  // Several exiting threads: one at a time, each event after its thread's mark.
  SpinLock g(lock);
  return pushOwned(threadMark(myTid())) && pushOwned(e);
}

bool ThreadState::pushOwned(const Event& e) {
  uint64_t h = head.load(std::memory_order_relaxed);
  if (h - tail.load(std::memory_order_acquire) >= kRingEvents && t_writer) {
    writerOverflow().push_back(e);  // the writer thread allocates freely (t_in_gcprof)
    return true;
  }
  if (h - tail.load(std::memory_order_acquire) >= kRingEvents && !waitForRoom(h)) {
    dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  ring[h % kRingEvents] = e;
  head.store(h + 1, std::memory_order_release);
  // Every quarter ring: half full already? Then the writer should not wait for
  // its round (a storm of allocations would otherwise stall on a full ring).
  if ((h + 1) % (kRingEvents / 4) == 0 && h + 1 - tail.load(std::memory_order_relaxed) >= kRingEvents / 2)
    wakeWriter();
  return true;
}

// Full: wait for the writer (backpressure keeps the trace complete), but never
// forever. The producer sleeps in the kernel rather than polling: eight
// threads of an allocation storm polling every 100 us spent more CPU in
// context switches than the writer spent writing (bench/RESULTS.md).
bool ThreadState::waitForRoom(uint64_t h) {
  wakeWriter();
  Ns deadline = nowNs() + kFullWaitNs;
  while (h - tail.load(std::memory_order_seq_cst) >= kRingEvents) {
    if (!writerRunning() || nowNs() > deadline) return false;
    // Announce, then look again: either drain() sees the 1 and wakes us, or
    // we see its new tail (both sides use sequentially consistent order).
    room_wanted.store(1, std::memory_order_seq_cst);
    if (h - tail.load(std::memory_order_seq_cst) < kRingEvents) break;
    futexWait(room_wanted, 1, 10000000);  // 10 ms: re-checks the writer and the deadline
  }
  room_wanted.store(0, std::memory_order_relaxed);
  return true;
}

uint32_t ThreadState::drain(Event* out, uint32_t max, int64_t before) {
  uint64_t t = tail.load(std::memory_order_relaxed);
  uint64_t h = head.load(std::memory_order_acquire);
  uint32_t n = 0;
  for (; t < h && n < max; ++t, ++n) {
    const Event& e = ring[t % kRingEvents];
    if (e.type != EventType::Thread && e.time >= before) break;
    out[n] = e;
  }
  tail.store(t, std::memory_order_seq_cst);
  if (n > 0 && room_wanted.load(std::memory_order_seq_cst) && room_wanted.exchange(0))
    futexWakeAll(room_wanted);
  return n;
}

ThreadState* threadStateSlow() {
  if (t_exited) return shared();
  return t_thread_state = create();
}

void markWriterThread() { t_writer = true; }

std::vector<Event>& writerOverflow() {
  static std::vector<Event>* events = new std::vector<Event>;  // never freed: used at exit
  return *events;
}

ThreadState* allThreadStates() { return g_states.load(std::memory_order_acquire); }

int threadStateCount() { return g_count.load(); }

}  // namespace gcprof::inject

#include "writer.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "config.h"
#include "event_processor.h"
#include "hook_guard.h"
#include "recorder.h"
#include "recording_state.h"
#include "thread_state.h"
#include "time_order.h"

namespace gcprof::inject {
// Provided by the CUDA backend when built with it (profiler/inject/cuda):
// hands CUPTI's buffered activity records to the recorder. Called here, on
// the writer thread, never from a signal handler (CUPTI is not
// async-signal-safe).
void flushCudaBackend() __attribute__((weak));
// Provided by the launched injector (lifecycle.cpp), not by attach's: puts
// in the SIGINT handler of a python process once Python has initialised,
// where Python left SIGINT at its default (ours first would displace
// Python's KeyboardInterrupt).
void deferredSignalHandlers() __attribute__((weak));

namespace {

// One drain + transaction per round. Much of a round's cost is its commit
// (the WAL frames of every table and index page it touched: ~13 pages besides
// the rows' own), not its rows: 100 ms rounds took the writer of the python
// jobs from 1.5-2.3% of the training thread's CPU to 1.0-1.5%, 200 ms rounds
// a short-step job's writer from 1.02 to 0.82 ms a step when the job is
// stopped between steps (bench/RESULTS.md). Longer rounds save more, but a
// killed job loses its youngest blocks: those of the last ~0.35 s now
// (docs/recording.md).
constexpr int kRoundMs = 200;
constexpr Ns kWatermarkNs = 20000000; // events younger than this wait a round
constexpr size_t kKeptScratch = 16384;  // events (~0.9 MiB): a quiet round's merge buffer is kept
// Events the writer takes from the rings regardless of age (~3.5 MiB): past
// it, events younger than the watermark stay in their rings.
constexpr size_t kStagedEvents = 65536;

std::atomic<bool> g_running{false};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_finished{false};
char g_final_status[16] = "complete";
int g_exit_code = 0;
pthread_t g_thread;
// Ends the writer's sleep before its round is over: a futex word, not a
// descriptor (a job that closes every descriptor and opens files would have
// got our wake-up bytes written into one of them).
std::atomic<uint32_t> g_wake{0};
// An exec in progress (flushBeforeExec): requested by the exec'ing thread,
// flushed by the writer, which then writes nothing more until the exec fails.
enum ExecState { kNoExec, kExecRequested, kExecFlushed };
std::atomic<int> g_exec{kNoExec};

// The writer is gone (done, failed, or not this process's: a fork's child).
void markWriterGone() {
  g_running.store(false);
  g_finished.store(true);
}

// The kernel counts a thread-group leader that called pthread_exit() as a
// zombie thread until the whole group ends: the writer is the last thread of
// the job when the leader is a zombie and only two threads are counted (or
// one). Read from /proc/self/stat: its state (field 3) and num_threads (20).
bool lastThreadLeft() {
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[1024];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  const char* p = std::strrchr(text, ')');  // the name may hold spaces and ')'
  if (!p || p[1] != ' ') return false;
  char state = p[2];
  long threads = 0;
  for (int field = 3; field <= 20 && p; ++field) p = std::strchr(p + 1, ' ');  // the space before it
  if (p) threads = std::strtol(p + 1, nullptr, 10);
  return threads == 1 || (state == 'Z' && threads == 2);
}

// Events pushed so far by every thread but the writer (the sum of their
// rings' heads). The job's threads can only all be gone after a round in
// which none of them pushed one: lastThreadLeft (an open and read of
// /proc/self/stat, 7% of the writer's CPU on a short-step job that the
// harness stops after each step, bench/RESULTS.md) is asked only then.
uint64_t eventsPushedByTheJob() {
  const ThreadState* mine = t_thread_state;  // the writer's own (CUPTI records it flushes)
  uint64_t pushed = 0;
  for (ThreadState* s = allThreadStates(); s; s = s->next.load())
    if (s != mine) pushed += s->head.load(std::memory_order_relaxed);
  return pushed;
}

// A terminating signal sent to the process while the job's last thread had
// it blocked waits, pending, for a thread that takes it: that is now us.
int pendingTermination() {
  sigset_t pending;
  if (sigpending(&pending) != 0) return 0;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT})
    if (sigismember(&pending, sig)) return sig;
  return 0;
}

// The job's threads are all gone (its main() ended with pthread_exit() and
// the others returned): without us the process would have ended, with
// exit(0) from the last thread, or of the signal still pending. The run is
// finished; do the same here, on the writer thread.
[[noreturn]] void endProcessAsItsLastThread() {
  recordingState().disabled.store(true);
  markWriterGone();
  sigset_t none;
  sigemptyset(&none);
  pthread_sigmask(SIG_SETMASK, &none, nullptr);  // a pending signal acts now
  std::exit(0);
}

// Sleeps at most `ms`, less when wakeWriter() was called since the last
// sleep (or is called during it).
void sleepUntilWoken(int ms) {
  if (g_wake.exchange(0) != 0) return;
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wake), FUTEX_WAIT_PRIVATE, 0, &ts, nullptr, 0);
  g_wake.store(0);
}

void sleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

// `gcprof ctl trace.db pause|resume` writes "<trace>.ctl"; we poll its mtime.
class ControlFile {
 public:
  void poll() {
    std::string path = std::string(config().db) + ".ctl";
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_mtim.tv_nsec + st.st_mtim.tv_sec * 1000000000L == seen_)
      return;
    seen_ = st.st_mtim.tv_nsec + st.st_mtim.tv_sec * 1000000000L;
    std::ifstream in(path);
    std::string word;
    in >> word;
    RecordingState& s = recordingState();
    if (word == "pause") s.paused = true;
    if (word == "resume") s.paused = false;
    applyWindow();  // a resume outside the --steps window keeps it shut
  }

 private:
  int64_t seen_ = 0;
};

// Once `out` holds kStagedEvents, events stamped at or after `before` stay in
// their ring for a later round: the rings, not this vector, then bound what
// a storm holds, and its producers wait for room. Below that, every event is
// taken, so a ring a burst filled is freed at once.
void drainAll(std::vector<Stamped>& out, Ns before) {
  static Event chunk[4096];
  for (ThreadState* s = allThreadStates(); s; s = s->next.load()) {
    // Only what the ring holds now: a thread that the drain wakes refills its
    // ring as fast as we empty it, and the round's events (held in memory
    // until written) would grow without bound. What it pushes meanwhile is
    // younger than the watermark below, so nothing is taken out of order.
    uint32_t budget = static_cast<uint32_t>(s->head.load(std::memory_order_acquire) -
                                            s->tail.load(std::memory_order_relaxed));
    for (uint32_t n; budget > 0 &&
                     (n = s->drain(chunk, std::min<uint32_t>(budget, 4096),
                                   out.size() < kStagedEvents ? INT64_MAX : before)) > 0;) {
      budget -= n;
      for (uint32_t i = 0; i < n; ++i) {
        // A buffer passes from an exited thread to the next one: a mark says whose
        // events follow (thread_state.h).
        if (chunk[i].type == EventType::Thread) s->drain_tid = static_cast<int64_t>(chunk[i].a);
        else out.push_back({chunk[i], s->drain_tid});
      }
    }
  }
}

// What the writer recorded itself past its ring (thread_state.h).
void drainWriterOverflow(std::vector<Stamped>& out) {
  std::vector<Event>& mine = writerOverflow();
  if (mine.empty()) return;
  int64_t tid = static_cast<int64_t>(syscall(SYS_gettid));
  for (const Event& e : mine) out.push_back({e, tid});
  mine.clear();
  mine.shrink_to_fit();
}

Counters sumCounters() {
  Counters c;
  for (ThreadState* s = allThreadStates(); s; s = s->next.load()) {
    c.small_allocs += s->small_allocs.load();
    c.small_bytes += s->small_bytes.load();
    c.dropped += s->dropped.load();
  }
  return c;
}

// The process execs: write everything it recorded, end what its image held,
// and write nothing more while the exec runs (it ends this thread, or fails
// and resumes us). The rings hold only published events: the exec'ing
// thread's own are all in (it waits for us here).
void flushImage(EventProcessor& proc, std::vector<Stamped>& staged, std::vector<Stamped>& scratch) {
  if (flushCudaBackend) flushCudaBackend();
  drainAll(staged, INT64_MAX);
  drainWriterOverflow(staged);
  sortByTime(staged, scratch);
  proc.process(staged.begin(), staged.end());
  staged.clear();
  proc.endImage(sumCounters(), recordingState().backend, recordingState().runtime);
  g_exec.store(kExecFlushed);
  while (g_exec.load() == kExecFlushed && !g_stop.load()) sleepMs(10);
}

void becomeWriterThread() {
  t_in_gcprof = true;  // nothing this thread allocates is the job's
  markWriterThread();
  // Not niced: at nice +10 a loaded machine gave the writer a tenth of a
  // thread's share, so it fell seconds behind and a SIGTERM'd job's 5 s flush
  // lost steps (bench/history/recording-overhead.md). SCHED_BATCH keeps what the nice
  // was for: waking every round, the writer does not preempt a running
  // training thread (whose OpenMP barrier would wait for it), it runs at the
  // next scheduler tick or on an idle core; over time it gets a normal share.
  sched_param batch{};
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
  pthread_setname_np(pthread_self(), "gcprof-writer");  // for top, perf and gdb (after the policy: tests read both)
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

// Null when the trace cannot be opened: the job then runs unrecorded.
std::unique_ptr<EventProcessor> openTrace() {
  try {
    return std::make_unique<EventProcessor>(config().db, config().root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gcprof: %s; not recording, the job continues\n", e.what());
    recordingState().disabled.store(true);
    return nullptr;
  }
}

// One round's writing: the events older than the watermark (all of them
// when stopping) leave the rings and are processed in time order. Returns
// how long the next round waits.
int writeRound(EventProcessor& proc, std::vector<Stamped>& staged, std::vector<Stamped>& scratch,
               bool stopping) {
  // A thread may have taken its timestamp but not yet published the
  // event: the youngest events wait for the next round. They wait in
  // their rings, not here: drained, they freed room for a storm's
  // producers, and what this vector held grew with the allocation rate
  // (up to 118,000 events, 14 MiB of capacity and as much again in the
  // merge: 41-82 MB peak RSS for the 4-thread storm).
  Ns watermark = stopping ? INT64_MAX : nowNs() - kWatermarkNs;
  drainAll(staged, watermark);
  drainWriterOverflow(staged);
  // A round that reached the cap left young events in the rings, and
  // their threads may wait for room: come back when those events are
  // old enough to take, not a whole round later.
  int next_round_ms = staged.size() >= kStagedEvents ? static_cast<int>(kWatermarkNs / 1000000) : kRoundMs;
  sortByTime(staged, scratch);
  // A storm's round is megabytes: give that back rather than keep a
  // second copy for the rest of the job (docs/recording.md, "Cost").
  if (scratch.capacity() > kKeptScratch) std::vector<Stamped>().swap(scratch);
  auto cut = std::partition_point(staged.begin(), staged.end(),
                                  [&](const Stamped& s) { return s.e.time < watermark; });
  proc.process(staged.begin(), cut);
  staged.erase(staged.begin(), cut);
  if (staged.capacity() > kKeptScratch && staged.size() <= kKeptScratch / 2)
    std::vector<Stamped>(staged.begin(), staged.end()).swap(staged);
  return next_round_ms;
}

void* writerMain(void*) {
  becomeWriterThread();
  std::unique_ptr<EventProcessor> proc = openTrace();
  if (!proc) {
    markWriterGone();
    return nullptr;
  }
  ControlFile ctl;
  std::vector<Stamped> staged, scratch;
  bool failed = false, orphaned = false;
  int round_ms = kRoundMs;
  uint64_t pushed = eventsPushedByTheJob();
  for (;;) {
    // One wake-up per round (each one can preempt a compute thread), but an
    // exiting process wakes us at once: launchers run many short processes.
    if (!g_stop.load()) sleepUntilWoken(round_ms);
    if (deferredSignalHandlers) deferredSignalHandlers();
    bool stopping = g_stop.load();
    if (!stopping && g_exec.load() == kExecRequested) {
      try {
        flushImage(*proc, staged, scratch);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gcprof: %s; recording stopped at exec\n", e.what());
        failed = true;
        g_exec.store(kExecFlushed);
        break;
      }
      continue;
    }
    uint64_t pushed_now = eventsPushedByTheJob();
    bool quiet = pushed_now == pushed;
    pushed = pushed_now;
    if (!stopping && quiet && lastThreadLeft()) {
      int sig = pendingTermination();
      std::strcpy(g_final_status, sig ? "interrupted" : "complete");
      g_exit_code = sig ? 128 + sig : 0;
      stopping = orphaned = true;
    }
    try {
      if (stopping && flushCudaBackend) flushCudaBackend();
      ctl.poll();
      round_ms = writeRound(*proc, staged, scratch, stopping);
      if (stopping) {
        Counters c = sumCounters();
        proc->finish(g_final_status, g_exit_code, c, recordingState().backend,
                     recordingState().runtime);
        break;
      }
      proc->commit(nowNs());
    } catch (const std::exception& e) {
      // A full disk or a damaged file: keep what is committed, stop recording.
      std::fprintf(stderr, "gcprof: %s; recording stopped, the job continues\n", e.what());
      failed = true;
      break;
    }
  }
  if (failed) recordingState().disabled.store(true);
  if (orphaned || lastThreadLeft()) {
    proc.reset();  // closes the trace
    endProcessAsItsLastThread();
  }
  markWriterGone();
  return nullptr;
}

}  // namespace

bool startWriter() {
  g_running.store(true);
  if (pthread_create(&g_thread, nullptr, writerMain, nullptr) != 0) {
    g_running.store(false);
    std::fprintf(stderr, "gcprof: cannot start the writer thread; not recording\n");
    return false;
  }
  return true;
}

void forgetWriterInChild() { markWriterGone(); }

void wakeWriter() {
  // One syscall only when the writer may be asleep on the word: a storm's
  // threads call this at every quarter of their rings.
  if (g_wake.exchange(1) == 0)
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_wake), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}

bool writerRunning() { return g_running.load(std::memory_order_relaxed); }

bool flushBeforeExec(int wait_ms) {
  if (!g_running.load() || g_stop.load()) return false;
  int expected = kNoExec;
  if (!g_exec.compare_exchange_strong(expected, kExecRequested)) return false;
  wakeWriter();
  for (int waited = 0; g_exec.load() == kExecRequested && !g_finished.load() && waited < wait_ms;
       waited += 5)
    sleepMs(5);
  return true;
}

void resumeAfterFailedExec() {
  g_exec.store(kNoExec);
  wakeWriter();
}

void stopWriter(const char* status, int wait_ms, int exit_code) {
  if (!g_running.load() || g_stop.load()) return;
  std::strncpy(g_final_status, status, sizeof(g_final_status) - 1);
  g_exit_code = exit_code;
  g_stop.store(true);
  wakeWriter();
  for (int waited = 0; !g_finished.load() && waited < wait_ms; waited += 5) sleepMs(5);
}

}  // namespace gcprof::inject

#include "writer.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
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

namespace {

// One drain + transaction per round. Most of a quiet round's cost is its
// commit (the WAL frames of every page it touched, the file locks), not its
// rows: 100 ms rounds took the writer of the python jobs from 1.5-2.3% of the
// training thread's CPU to 1.0-1.5% (bench/history/recording-overhead.md). Longer
// rounds save more but a killed job would lose more of its youngest memory.
constexpr int kRoundMs = 100;
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
int g_wake[2] = {-1, -1};  // stopWriter writes a byte to end the writer's sleep

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

Counters sumCounters() {
  Counters c;
  for (ThreadState* s = allThreadStates(); s; s = s->next.load()) {
    c.small_allocs += s->small_allocs.load();
    c.small_bytes += s->small_bytes.load();
    c.dropped += s->dropped.load();
  }
  return c;
}

void* writerMain(void*) {
  t_in_gcprof = true;  // nothing this thread allocates is the job's
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
  std::unique_ptr<EventProcessor> proc;
  try {
    proc = std::make_unique<EventProcessor>(config().db, config().root);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gcprof: %s; not recording, the job continues\n", e.what());
    recordingState().disabled.store(true);
    g_running.store(false);
    g_finished.store(true);
    return nullptr;
  }
  ControlFile ctl;
  std::vector<Stamped> staged, scratch;
  bool failed = false;
  int round_ms = kRoundMs;
  for (;;) {
    // One wake-up per round (each one can preempt a compute thread), but an
    // exiting process wakes us at once: launchers run many short processes.
    if (!g_stop.load()) {
      pollfd wake{g_wake[0], POLLIN, 0};
      // A job that closes every descriptor closes ours too: then just sleep.
      if (g_wake[0] < 0 || (poll(&wake, 1, round_ms) > 0 && (wake.revents & POLLNVAL))) {
        g_wake[0] = -1;
        sleepMs(round_ms);
      } else if (wake.revents & POLLIN) {
        char bytes[64];
        while (read(g_wake[0], bytes, sizeof bytes) > 0) {
        }
      }
    }
    bool stopping = g_stop.load();
    try {
      if (stopping && flushCudaBackend) flushCudaBackend();
      ctl.poll();
      // A thread may have taken its timestamp but not yet published the
      // event: the youngest events wait for the next round. They wait in
      // their rings, not here: drained, they freed room for a storm's
      // producers, and what this vector held grew with the allocation rate
      // (up to 118,000 events, 14 MiB of capacity and as much again in the
      // merge: 41-82 MB peak RSS for the 4-thread storm).
      Ns watermark = stopping ? INT64_MAX : nowNs() - kWatermarkNs;
      drainAll(staged, watermark);
      // A round that reached the cap left young events in the rings, and
      // their threads may wait for room: come back when those events are
      // old enough to take, not a whole round later.
      round_ms = staged.size() >= kStagedEvents ? static_cast<int>(kWatermarkNs / 1000000) : kRoundMs;
      sortByTime(staged, scratch);
      // A storm's round is megabytes: give that back rather than keep a
      // second copy for the rest of the job (docs/recording.md, "Cost").
      if (scratch.capacity() > kKeptScratch) std::vector<Stamped>().swap(scratch);
      auto cut = std::partition_point(staged.begin(), staged.end(),
                                      [&](const Stamped& s) { return s.e.time < watermark; });
      proc->process(staged.begin(), cut);
      staged.erase(staged.begin(), cut);
      if (staged.capacity() > kKeptScratch && staged.size() <= kKeptScratch / 2)
        std::vector<Stamped>(staged.begin(), staged.end()).swap(staged);
      if (stopping) {
        Counters c = sumCounters();
        proc->finish(g_final_status, g_exit_code, c, recordingState().backend,
                     recordingState().runtime);
        break;
      }
      proc->commit();
    } catch (const std::exception& e) {
      // A full disk or a damaged file: keep what is committed, stop recording.
      std::fprintf(stderr, "gcprof: %s; recording stopped, the job continues\n", e.what());
      failed = true;
      break;
    }
  }
  if (failed) recordingState().disabled.store(true);
  g_running.store(false);
  g_finished.store(true);
  return nullptr;
}

}  // namespace

bool startWriter() {
  if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) g_wake[0] = g_wake[1] = -1;
  g_running.store(true);
  if (pthread_create(&g_thread, nullptr, writerMain, nullptr) != 0) {
    g_running.store(false);
    std::fprintf(stderr, "gcprof: cannot start the writer thread; not recording\n");
    return false;
  }
  return true;
}

void forgetWriterInChild() {
  g_running.store(false);
  g_finished.store(true);
}

void wakeWriter() {
  if (g_wake[1] < 0) return;
  char byte = 1;
  ssize_t ignored = write(g_wake[1], &byte, 1);  // a full pipe is a pending wake-up already
  (void)ignored;
}

bool writerRunning() { return g_running.load(std::memory_order_relaxed); }

void stopWriter(const char* status, int wait_ms, int exit_code) {
  if (!g_running.load() || g_stop.load()) return;
  std::strncpy(g_final_status, status, sizeof(g_final_status) - 1);
  g_exit_code = exit_code;
  g_stop.store(true);
  wakeWriter();
  for (int waited = 0; !g_finished.load() && waited < wait_ms; waited += 5) sleepMs(5);
}

}  // namespace gcprof::inject

// The recording entry points (recorder.h): turn hook calls into events in the
// calling thread's buffer. No allocation and no syscalls here; the spinlocks
// taken are listed in recorder.h.
#include "recorder.h"

#include <time.h>

#include <atomic>
#include <cstring>

#include "address_key.h"
#include "address_set.h"
#include "config.h"
#include "event.h"
#include "hook_guard.h"
#include "name_table.h"
#include "recording_state.h"
#include "thread_state.h"

namespace gcprof::inject {
namespace {

std::atomic<uint64_t> g_next_range{1};
std::atomic<int64_t> g_step{-1};
// `gcprof attach` (Config::attached): the job's first step after attach,
// from which the --steps window counts.
std::atomic<int64_t> g_first_step{INT64_MIN};

bool push(ThreadState* ts, EventType type, uint64_t a = 0, int64_t b = 0, int64_t c = 0,
          int64_t d = 0, Ns time = 0) {
  Event e;
  e.time = time ? time : nowNs();
  e.a = a;
  e.b = b;
  e.c = c;
  e.d = d;
  e.type = type;
  e.api = 0;
  e.kind = 0;
  e.device = -1;
  e.stream32 = 0;
  return ts->push(e);
}

// Whether a free is matched to a recorded block here, in the live-address
// set, or only by the writer (which keeps every live block anyway and counts
// a free it cannot match in runs.unmatched_frees). Host memory under `record`
// is seen from the process's start, so the writer's match is enough, and the
// set's insert and erase (a cache miss each, ~0.8% of a short-step job's
// training thread) are saved. Device memory is freed twice over (PyTorch's
// allocator and CUDA's cudaFree) and `attach` must tell the job's blocks from
// before it apart (attach/session.cpp): both keep the set.
bool matchesFreesHere(int device) { return device >= 0 || config().attached; }

bool inStepsWindow(int64_t step) {
  const Config& c = config();
  if (c.steps_from < 0) return true;
  if (c.attached) {
    int64_t first = g_first_step.load(std::memory_order_relaxed);
    if (first == INT64_MIN) return false;
    step -= first;
  }
  return step >= c.steps_from && (c.steps_to < 0 || step < c.steps_to);
}

}  // namespace

Ns nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Ns>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool active() { return recordingState().window.load(std::memory_order_relaxed) && recording(); }

void recordAlloc(uint64_t addr, int64_t bytes, int api, int device, int64_t stream, int kind,
                 bool force, Ns time) {
  if (!recording() || addr == 0) return;
  ThreadState* ts = threadState();
  if (!ts) return;
  if (bytes < config().min_bytes && !force) {
    ts->countSmall(bytes);
    return;
  }
  if (matchesFreesHere(device) && !liveAddresses().insert(addressKey(addr, device, kind))) {
    // PyTorch's allocator reports a segment right after the cudaMalloc
    // CUPTI recorded at that address: the writer lets it replace that row.
    if (api != kApiC10CachingAllocator) {
      ts->dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  Event e;
  e.time = time ? time : nowNs();
  e.a = addr;
  e.b = bytes;
  e.c = static_cast<int64_t>(ts->currentRange());
  e.d = stream;
  e.type = EventType::Alloc;
  e.api = static_cast<uint8_t>(api);
  e.kind = static_cast<uint8_t>(kind);
  e.device = static_cast<int8_t>(device);
  e.stream32 = 0;
  ts->push(e);
}

void recordFree(uint64_t addr, int device, Ns time, int kind) {
  if (!recording() || addr == 0) return;
  if (matchesFreesHere(device) &&
      (liveAddresses().empty() || !liveAddresses().erase(addressKey(addr, device, kind))))
    return;
  ThreadState* ts = threadState();
  if (!ts) return;
  Event e{};
  e.time = time ? time : nowNs();
  e.a = addr;
  e.type = EventType::Free;
  e.kind = static_cast<uint8_t>(kind);
  e.device = static_cast<int8_t>(device);
  ts->push(e);
}

uint64_t rangeStart(const char* name, int phase, int domain) {
  return active() ? rangeStartInterned(internName(name), phase, domain) : 0;
}

uint64_t rangeStartInterned(const char* interned, int phase, int domain) {
  if (!active()) return 0;
  ThreadState* ts = threadState();
  if (!ts) return 0;
  uint64_t id = g_next_range.fetch_add(1, std::memory_order_relaxed);
  uint64_t parent = ts->currentRange();
  // (The shared buffer of exited threads keeps no range stack.)
  if (!ts->shared && ts->depth < kMaxRangeDepth) ts->ranges[ts->depth++] = id;
  push(ts, EventType::RangeStart, id, reinterpret_cast<int64_t>(interned),
       (phase & 0xff) | (domain << 8), static_cast<int64_t>(parent));
  return id;
}

void rangeEnd(uint64_t id) {
  if (id == 0 || !recording()) return;
  ThreadState* ts = threadState();
  if (!ts) return;
  for (int i = ts->shared ? -1 : ts->depth - 1; i >= 0; --i) {
    if (ts->ranges[i] == id) {
      std::memmove(&ts->ranges[i], &ts->ranges[i + 1], (ts->depth - i - 1) * sizeof(uint64_t));
      --ts->depth;
      break;
    }
  }
  push(ts, EventType::RangeEnd, id);
}

void rangeIO(uint64_t id, int64_t input_bytes, int64_t output_bytes) {
  if (id == 0 || !recording()) return;
  if (ThreadState* ts = threadState()) push(ts, EventType::RangeIO, id, input_bytes, output_bytes);
}

uint64_t currentRange() {
  ThreadState* ts = recording() ? threadState() : nullptr;
  return ts ? ts->currentRange() : 0;
}

void stepBegin(int64_t step) {
  if (!recording() || recordingState().steps_held.load(std::memory_order_relaxed)) return;
  g_step.store(step, std::memory_order_relaxed);
  int64_t unset = INT64_MIN;
  bool first = g_first_step.compare_exchange_strong(unset, step, std::memory_order_relaxed);
  // The --steps window opens at its first step: events before it stay out.
  if (config().steps_from >= 0) applyWindow();
  if (!active()) return;
  if (ThreadState* ts = threadState()) push(ts, EventType::StepBegin, static_cast<uint64_t>(step));
  // Marks an attached run, and the job's number of its first step: `verify`
  // pairs its steps with those of the job re-run from its start.
  if (first && config().attached) scalar("attach_step", static_cast<double>(step));
}

void applyWindow() {
  setWindow(!recordingState().paused && inStepsWindow(g_step.load(std::memory_order_relaxed)));
}

void stepEnd() {
  if (!active()) return;
  int64_t step = g_step.load(std::memory_order_relaxed);
  if (ThreadState* ts = threadState()) push(ts, EventType::StepEnd, static_cast<uint64_t>(step));
  const Config& c = config();
  int64_t first = c.attached ? g_first_step.load(std::memory_order_relaxed) : 0;
  if (c.steps_to >= 0 && step - first + 1 >= c.steps_to) setWindow(false);
}

void scalar(const char* name, double value) {
  if (!active()) return;
  ThreadState* ts = threadState();
  if (!ts) return;
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  // The step it belongs to is the job's, not the last one the trace saw
  // begin: a recording resumed (`gcprof ctl resume`) in the middle of a step
  // never saw it begin, and its loss is still that step's.
  push(ts, EventType::Scalar, static_cast<uint64_t>(g_step.load(std::memory_order_relaxed)),
       reinterpret_cast<int64_t>(internName(name)), bits);
}

void recordKernel(const char* name, int device, int64_t stream, Ns start, Ns end,
                  int64_t correlation, uint64_t range) {
  if (!recording()) return;
  ThreadState* ts = threadState();
  if (!ts) return;
  Event e{};
  e.time = start;
  e.a = static_cast<uint64_t>(end);
  e.b = reinterpret_cast<int64_t>(internName(name));
  e.c = correlation;
  e.d = static_cast<int64_t>(range);
  e.type = EventType::Kernel;
  e.device = static_cast<int8_t>(device);
  e.stream32 = static_cast<uint32_t>(stream);
  ts->push(e);
}

void countDropped(int64_t n) {
  if (ThreadState* ts = threadState()) ts->dropped.fetch_add(n, std::memory_order_relaxed);
}

void setWindow(bool open) {
  RecordingState& s = recordingState();
  if (s.window.exchange(open) == open) return;
  if (ThreadState* ts = threadState())
    push(ts, open ? EventType::WindowOpen : EventType::WindowClose);
}

}  // namespace gcprof::inject

namespace gcprof::inject {

__thread bool t_in_gcprof __attribute__((tls_model("initial-exec"))) = false;
__thread bool t_frees_are_the_jobs __attribute__((tls_model("initial-exec"))) = false;

RecordingState g_recording_state;

void setBackend(const char* name) {
  std::strncpy(recordingState().backend, name, sizeof(RecordingState::backend) - 1);
}

void setRuntime(const char* name) {
  std::strncpy(recordingState().runtime, name, sizeof(RecordingState::runtime) - 1);
}

}  // namespace gcprof::inject

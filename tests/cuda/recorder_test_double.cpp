// TEST DOUBLE: see recorder_test_double.h.
#include "recorder_test_double.h"

#include <mutex>

namespace gcprof::inject {

// The injector's "inside gcprof" flag (hook_guard.h), defined by the real
// injector's malloc hooks; the backend sets it around CUPTI callbacks.
__thread bool t_in_gcprof __attribute__((tls_model("initial-exec"))) = false;

namespace {
std::mutex g_mutex;  // CUPTI's worker thread and the test thread both report
test_double::RecorderLog g_log;
Ns g_now = 0;
thread_local uint64_t t_range = 0;
}  // namespace

namespace test_double {
RecorderLog& log() { return g_log; }
void reset() {
  std::lock_guard<std::mutex> g(g_mutex);
  g_log = RecorderLog{};
  g_now = 0;
  t_range = 0;
}
void setNow(Ns now) { g_now = now; }
void setCurrentRange(uint64_t range) { t_range = range; }
}  // namespace test_double

Ns nowNs() { return g_now; }
bool active() { return true; }

void recordAlloc(uint64_t addr, int64_t bytes, int api, int device, int64_t stream, int kind,
                 bool force, Ns time) {
  std::lock_guard<std::mutex> g(g_mutex);
  g_log.allocs.push_back({addr, bytes, api, device, stream, kind, force, time, t_range});
  g_log.live.insert(addr);
}

void recordFree(uint64_t addr, int device, Ns time, int /*kind*/) {
  std::lock_guard<std::mutex> g(g_mutex);
  if (g_log.live.erase(addr) == 0) {
    ++g_log.unmatched_frees;
    return;
  }
  g_log.frees.push_back({addr, device, time});
}

uint64_t rangeStart(const char*, int, int) { return 0; }
void rangeEnd(uint64_t) {}
uint64_t currentRange() { return t_range; }
void stepBegin(int64_t) {}
void stepEnd() {}
void scalar(const char*, double) {}

void recordKernel(const char* name, int device, int64_t stream, Ns start, Ns end,
                  int64_t correlation, uint64_t range) {
  std::lock_guard<std::mutex> g(g_mutex);
  g_log.kernels.push_back({name, device, stream, start, end, correlation, range});
}

void countDropped(int64_t n) {
  std::lock_guard<std::mutex> g(g_mutex);
  g_log.dropped += n;
}

void setBackend(const char* name) {
  std::lock_guard<std::mutex> g(g_mutex);
  g_log.backend = name;
}

void rangeIO(uint64_t, int64_t, int64_t) {}
void setRuntime(const char*) {}

}  // namespace gcprof::inject

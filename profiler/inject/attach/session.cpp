// The attach thread (session.h). The CLI's gdb call only starts it and
// returns, so that the job's stopped thread does as little as possible; all
// the work (allocator hooks, writer, python hooks, detach) runs here.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "attach/alloc_hooks.h"
#include "attach/device_backend.h"
#include "attach/got_patch.h"
#include "attach/python_bridge.h"
#include "attach/session.h"
#include "attach/session_folder.h"
#include "address_key.h"
#include "address_set.h"
#include "config.h"
#include "heap_walk.h"
#include "hook_guard.h"
#include "recorder.h"
#include "recording_state.h"
#include "trace.h"
#include "writer.h"

namespace gcprof::inject::attach {
namespace {

enum class Phase { Idle, Attaching, Attached, Detaching, Detached };
std::atomic<Phase> g_phase{Phase::Idle};
// Never destroyed: the attach thread may still use them while the job exits
// and its static destructors run (a job that ended mid-attach had its state
// file written under a freed path's bytes: a file of a garbage name in its
// working directory).
Request& g_request = *new Request;
std::string& g_conf_path = *new std::string;
bool g_python = false;
constexpr int kPollMs = 20;

void sleepMs(int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

int64_t nowMs() { return nowNs() / 1000000; }

// Replaced whole (rename), so that the CLI never reads half a line.
void writeState(const std::string& line) {
  std::string tmp = g_request.state + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line << "\n";
  }
  rename(tmp.c_str(), g_request.state.c_str());
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const void* self() { return reinterpret_cast<const void*>(&writeState); }

size_t patchNewObjects() {
  size_t n = 0;
  const GotHook* hooks = allocationHooks(&n);
  return patchLoadedObjects(hooks, n, self());
}

// The python shim's side (profiler/python/gcprof/attach.py), imported from
// the shim folder without leaving that folder on the job's sys.path.
bool importShim() {
  std::string dir = pythonLiteral(g_request.shim);
  return evalPython("__import__('sys').path.insert(0, " + dir + ") or 0", -1) == 0 &&
         evalPython("0 if __import__('gcprof.attach') else 0", -1) == 0 &&
         evalPython("__import__('sys').path.remove(" + dir + ") or 0", -1) == 0;
}

// 0 attached; otherwise why not. The hooks go in only between two module
// calls (the shim says "busy" while a thread is inside one): a step cut in
// half would name the modules wrongly.
std::string attachPython() {
  if (!importShim()) return "cannot import the python shim from " + g_request.shim;
  Dl_info info{};
  dladdr(self(), &info);
  std::string call = "__import__('sys').modules['gcprof.attach'].try_start(" +
                     pythonLiteral(info.dli_fname ? info.dli_fname : "") + ", " +
                     pythonLiteral(g_request.backend) + ")";
  for (int64_t waited = 0; waited < 60000; waited += 2) {
    long r = evalPython(call, -1);
    if (r == 0) return "";
    if (r == 2) return "torch is not imported in this python process";
    if (r != 1) return "the python shim failed to attach (its error is on the job's stderr)";
    sleepMs(2);
  }
  return "no moment outside a module call within 60 s";
}

void detachPython() {
  evalPython("__import__('sys').modules['gcprof.attach'].detach() or 0", -1);
}

bool cliGone() {
  return g_request.cli_pid > 0 && kill(static_cast<pid_t>(g_request.cli_pid), 0) != 0 &&
         errno == ESRCH;
}

// Undo in reverse: python hooks, CUPTI, GOT slots, then the writer's final flush.
void detach(const char* reason, const char* status) {
  Phase expected = Phase::Attached;
  if (!g_phase.compare_exchange_strong(expected, Phase::Detaching)) return;
  setWindow(false);
  if (g_python) detachPython();
  stopDeviceBackend();
  size_t restored = restorePatchedSlots();
  stopWriter(status, 30000, 0);
  recordingState().disabled.store(true);
  g_phase.store(Phase::Detached);
  writeState(std::string("detached status=") + status + " reason=" + reason +
             " restored=" + std::to_string(restored));
  // Nobody else will remove the session's folder.
  if (cliGone()) attach_session::removeFolder(g_request.state.substr(0, g_request.state.rfind('/')));
}

// The job exits while attached: finish the run as a recorded job's is.
void onExit(int status, void*) {
  Phase expected = Phase::Attached;
  if (!g_phase.compare_exchange_strong(expected, Phase::Detaching)) return;
  flushDeviceBackend();
  stopWriter(status == 0 ? "complete" : "failed", 30000, status);
  recordingState().disabled.store(true);
  g_phase.store(Phase::Detached);
  writeState("detached status=exited reason=the job exited with " + std::to_string(status));
}

void onForkChild() { recordingState().disabled.store(true); forgetWriterInChild(); }

void fail(const std::string& why) {
  stopDeviceBackend();
  restorePatchedSlots();
  if (writerRunning()) stopWriter("interrupted", 5000, 0);
  recordingState().disabled.store(true);
  g_phase.store(Phase::Detached);
  writeState("failed: " + why);
}

void watch() {
  int64_t start = nowMs();
  bool window_seen = false;
  for (;;) {
    sleepMs(kPollMs);
    if (g_phase.load() != Phase::Attached) return;
    patchNewObjects();
    bool open = recordingState().window.load();
    window_seen |= open;
    if (readFile(g_request.ctl).find("detach") != std::string::npos) return detach("asked", "complete");
    if (cliGone()) return detach("gcprof-attach-ended", "interrupted");
    if (g_request.steps > 0 && window_seen && !open) return detach("steps", "complete");
    if (g_request.duration_ms > 0 && nowMs() - start >= g_request.duration_ms)
      return detach("duration", "complete");
    if (recordingState().disabled.load()) return detach("recording-failed", "interrupted");
  }
}

// The job's memory from before attach (heap_walk.h) as its baseline: the
// blocks malloc holds now that the hooks are in, at an address that held a
// block before gcprof set anything up (`before`; its size may have changed
// since: a realloc in place, or a free and a malloc the hooks did not see),
// less those the hooks have seen since. So gcprof's own blocks (writer,
// hooks: allocated in between, in its threads' arenas) and the job's blocks
// freed meanwhile are left out. A block the job frees after the second walk
// and before it is recorded here is a free the hooks could not match: each
// block is looked at again right after it is recorded, and one no longer
// held is freed in the trace too. What it found goes to the state line.
std::string recordHeapBaseline(const HeapWalk& before) {
  HeapWalk now(g_request.min_bytes);
  HookGuard guard;
  int64_t bytes = 0, blocks = 0, gone = 0;
  for (const HeapBlock& b : now) {
    if (!before.containsAddress(b.addr) || liveAddresses().contains(addressKey(b.addr, -1))) continue;
    recordAlloc(b.addr, b.bytes, static_cast<int>(gcprof::AllocApi::Preexisting));
    if (stillHeld(b)) {
      bytes += b.bytes;
      ++blocks;
    } else {
      recordFree(b.addr, -1);
      ++gone;
    }
  }
  return " heap_baseline_bytes=" + std::to_string(bytes) + " heap_baseline_blocks=" +
         std::to_string(blocks) + " heap_baseline_gone=" + std::to_string(gone) +
         " heap_regions_skipped=" + std::to_string(before.regions_skipped + now.regions_skipped);
}

bool startRecording(std::string& why) {
  Config c;
  c.enabled = true;
  if (g_request.db.size() >= sizeof c.db) {
    why = "trace path too long";
    return false;
  }
  strcpy(c.db, g_request.db.c_str());
  c.min_bytes = g_request.min_bytes;
  c.steps_from = 0;  // the window opens at the first step after attach
  c.steps_to = g_request.steps > 0 ? g_request.steps : -1;
  c.attached = true;
  c.root = true;
  c.run_id = g_request.run_id;
  snprintf(c.backend, sizeof c.backend, "%s", g_request.backend.c_str());
  setConfig(c);
  recordingState().window.store(false);
  recordingState().steps_held.store(true);
  if (!resolveAllocator()) {
    why = "the allocator's functions (malloc, free, ...) were not found";
    return false;
  }
  static bool registered = false;
  if (!registered) {
    registered = true;
    pthread_atfork(nullptr, nullptr, onForkChild);
    on_exit(onExit, nullptr);
  }
  if (!startWriter()) {
    why = "the writer could not start";
    return false;
  }
  recordingState().ready.store(true);
  return true;
}

void* attachMain(void*) {
  t_in_gcprof = true;  // what this thread allocates is gcprof's, not the job's
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pthread_setname_np(pthread_self(), "gcprof-attach");
  std::string error;
  if (!parseRequest(readFile(g_conf_path), g_request, error)) {
    std::fprintf(stderr, "gcprof attach: %s: %s\n", g_conf_path.c_str(), error.c_str());
    g_phase.store(Phase::Detached);
    return nullptr;
  }
  int64_t t0 = nowNs();
  // Before gcprof allocates anything (CUDA tensors' baseline is the shim's,
  // attach.py).
  HeapWalk heap_before(g_request.min_bytes);
  if (!startRecording(error)) {
    fail(error);
    return nullptr;
  }
  size_t slots = patchNewObjects();
  std::string heap_baseline = recordHeapBaseline(heap_before);
  recordingState().steps_held.store(false);
  std::string cuda_why;
  std::string cuda = startDeviceBackend(g_request.backend, cuda_why);
  int64_t hooked = nowNs();
  g_phase.store(Phase::Attached);
  g_python = !g_request.shim.empty() && pythonPresent();
  if (g_python) {
    std::string why = attachPython();
    if (!why.empty()) {
      g_phase.store(Phase::Attaching);
      fail(why);
      return nullptr;
    }
  }
  int64_t ready = nowNs();
  writeState("attached run=" + std::to_string(g_request.run_id) + " slots=" +
             std::to_string(slots) + " python=" + (g_python ? "1" : "0") + " hooks_ms=" +
             std::to_string((hooked - t0) / 1000000) +
             " ready_ms=" + std::to_string((ready - t0) / 1000000) + heap_baseline + " cuda=" + cuda +
             (cuda_why.empty() ? "" : "\ncuda_off=" + cuda_why));
  watch();
  return nullptr;
}

}  // namespace
}  // namespace gcprof::inject::attach

using namespace gcprof::inject::attach;

extern "C" {

// Called by `gcprof attach` through gdb in a stopped thread of the job: it
// only starts the attach thread. 0 started; -1 already attached; -2 no thread.
__attribute__((visibility("default"))) int gcprof_attach_start(const char* conf_path) {
  Phase expected = Phase::Idle;
  if (!g_phase.compare_exchange_strong(expected, Phase::Attaching)) return -1;
  g_conf_path = conf_path;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int rc = pthread_create(&thread, &attr, attachMain, nullptr);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    g_phase.store(Phase::Idle);
    return -2;
  }
  return 0;
}

// The python shim's baseline without PyTorch's allocator snapshot: a CUDA
// tensor's storage that existed before attach,
// recorded as a block allocated now (its free, later, is matched).
__attribute__((visibility("default"))) void gcprof_attach_baseline(uint64_t addr, int64_t bytes,
                                                                   int device) {
  gcprof::inject::HookGuard guard;
  gcprof::inject::recordAlloc(addr, bytes, static_cast<int>(gcprof::AllocApi::PosixMemalign),
                              device);
}

// What PyTorch's CUDA caching allocator held at attach (device_baseline.py):
// a segment or tensor block its trace tracker has not reported since it was
// attached, recorded as allocated now, as the allocator's own rows are.
__attribute__((visibility("default"))) void gcprof_attach_device_baseline(uint64_t addr,
                                                                          int64_t bytes, int device,
                                                                          int64_t stream, int kind) {
  gcprof::inject::HookGuard guard;
  if (gcprof::inject::liveAddresses().contains(gcprof::inject::addressKey(addr, device, kind))) return;
  gcprof::inject::recordAlloc(addr, bytes, gcprof::inject::kApiC10CachingAllocator, device, stream,
                              kind, true);
}

}  // extern "C"

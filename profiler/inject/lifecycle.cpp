// Start-up and shut-down of the injector in a recorded process: read the
// configuration, start the writer, and make sure everything buffered reaches
// the trace on exit, SIGINT and SIGTERM, while a forked child (a DataLoader
// worker) never writes into its parent's run.
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "config.h"
#include "hook_guard.h"
#include "recorder.h"
#include "recording_state.h"
#include "writer.h"

namespace gcprof::inject {
// Provided by the CUDA backend when built with it (profiler/inject/cuda).
// (Its flush runs on the writer thread as it stops: see writer.cpp.)
void attachCudaBackend() __attribute__((weak));

namespace {

// on_exit rather than atexit: it is told the exit status, also when main
// returns (python's sys.exit and uncaught exceptions end that way), so a rank
// that failed says so in its run (docs/distributed.md).
void onExit(int status, void*) {
  if (recordingState().disabled.load()) return;
  stopWriter(status == 0 ? "complete" : "failed", 30000, status);
  recordingState().disabled.store(true);
}

void onForkChild() {
  // The writer thread does not exist in the child; its events would never be
  // written, and its memory is the parent's copy anyway.
  recordingState().disabled.store(true);
  forgetWriterInChild();
}

void onTerminatingSignal(int sig) {
  // Flush, then die of the same signal so the job's exit status is unchanged.
  // Only async-signal-safe work here (atomics, write, nanosleep): the writer
  // thread does the rest, CUPTI's flush included. The wait is bounded
  // (`record --flush-wait`, default 5 s): a job told to stop must stop even
  // when the trace cannot be written (a locked or full disk).
  // With the shell's code for the signal: when `record` itself was killed
  // (its job gets SIGTERM, PR_SET_PDEATHSIG) nobody else will store it.
  stopWriter("interrupted", config().flush_wait_ms, 128 + sig);
  recordingState().disabled.store(true);
  signal(sig, SIG_DFL);
  raise(sig);
}

// abort(): std::terminate ("terminate called without an active exception"),
// a failed assert, glibc's heap checks. The run is marked failed with the
// shell's code for the signal (134) and keeps what was recorded; the aborting
// thread's native stack goes to stderr, because a rank that aborts at exit
// under load is otherwise unexplained (docs/distributed.md). Then the job
// dies of SIGABRT as it would have without us.
void writeText(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored;
}

void writeNumber(long n) {  // no printf in a signal handler
  char digits[24];
  int i = sizeof digits;
  digits[--i] = '\0';
  do {
    digits[--i] = static_cast<char>('0' + n % 10);
    n /= 10;
  } while (n > 0 && i > 0);
  writeText(digits + i);
}

// The thread that handles the first abort: a second thread aborting
// meanwhile waits for it (the process dies of the first), and the same
// thread aborting again inside the handler (a crash while unwinding) dies at
// once rather than flush twice.
std::atomic<long> g_aborting_tid{0};

void onAbort(int sig) {
  long self = static_cast<long>(syscall(SYS_gettid));
  long none = 0;
  if (!g_aborting_tid.compare_exchange_strong(none, self)) {
    if (none != self) {
      // Bounded: should the first never finish, die of our own abort.
      timespec ts{0, 10000000};
      for (int i = 0; i < 100 * 60; ++i) nanosleep(&ts, nullptr);
    }
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  // Which thread aborted tells most of the story (a gloo worker, an autograd
  // thread, the main thread in static destructors): its name and tid first.
  char name[17] = {};
  prctl(PR_GET_NAME, name);
  writeText("gcprof: this process aborted (SIGABRT) in thread '");
  writeText(name);
  writeText("' (tid ");
  writeNumber(self);
  writeText("); its native stack:\n");
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  stopWriter("failed", 5000, 128 + sig);
  recordingState().disabled.store(true);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Only where the job keeps the default action: a handler of its own (Python's
// SIGINT) wins, and then exit runs through onExit anyway. Swapped in one
// call and put back if the job's went in meanwhile (we may run on the writer
// thread while the job's main thread sets its own).
void catchIfDefault(int sig, void (*handler)(int)) {
  struct sigaction old;
  if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(sig, &sa, &old) == 0 && old.sa_handler != SIG_DFL) sigaction(sig, &old, nullptr);
}

// SIGTERM and SIGABRT from the start: a job told to stop in its first
// moments still waits for its events (the trace may be locked; a deferred
// handler lost them, e2e.hardening.flush_wait).
void catchStopAndAbort() {
  catchIfDefault(SIGTERM, onTerminatingSignal);
  // backtrace() loads its unwinder on first use, which is no work for a
  // signal handler: do it now.
  void* frame[1];
  backtrace(frame, 1);
  catchIfDefault(SIGABRT, onAbort);
}

// Python installs its SIGINT handler (KeyboardInterrupt) at initialisation
// only where SIGINT is still SIG_DFL, and signal.getsignal() answers None for
// any handler it did not install. With ours in first, Ctrl-C no longer raised
// KeyboardInterrupt (a job's `except KeyboardInterrupt:` never ran), and
// multiprocessing's forkserver, which puts back the SIGINT handler
// getsignal() gave it, died of a TypeError. So in a python process that has
// not initialised yet, SIGINT is left to Python: the writer polls
// (deferredSignalHandlers) and, once Python is up, ours goes in only where
// SIGINT is still at its default. An uncaught KeyboardInterrupt ends Python
// through kill(getpid(), SIGINT), where the run is finished (exit_hooks.cpp).
// A program that links libpython and never initialises it gets ours after
// kPythonInitWaitNs. SIGTERM's handler is ours from the start, so
// getsignal(SIGTERM) answers None in a recorded python job.
using PyIsInitializedFn = int (*)();
std::atomic<PyIsInitializedFn> g_python_initialized{nullptr};
Ns g_deferred_since = 0;
constexpr Ns kPythonInitWaitNs = 10'000'000'000;

}  // namespace

void deferredSignalHandlers() {
  PyIsInitializedFn initialized = g_python_initialized.load(std::memory_order_relaxed);
  if (!initialized) return;
  if (!initialized() && nowNs() - g_deferred_since < kPythonInitWaitNs) return;
  g_python_initialized.store(nullptr);
  if (!recordingState().disabled.load()) catchIfDefault(SIGINT, onTerminatingSignal);
}

namespace {

__attribute__((constructor)) void startUp() {
  HookGuard guard;
  loadConfig();
  const Config& c = config();
  if (!c.enabled) return;
  RecordingState& s = recordingState();
  s.paused = c.start_paused;
  s.window.store(c.steps_from < 0 && !c.start_paused);
  pthread_atfork(nullptr, nullptr, onForkChild);
  if (!startWriter()) return;
  s.ready.store(true);
  on_exit(onExit, nullptr);
  catchStopAndAbort();
  auto python = reinterpret_cast<PyIsInitializedFn>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  if (python && !python()) {
    g_deferred_since = nowNs();
    g_python_initialized.store(python);
  } else {
    catchIfDefault(SIGINT, onTerminatingSignal);
  }
  if (attachCudaBackend && strcmp(c.backend, "host") != 0) attachCudaBackend();
}

}  // namespace
}  // namespace gcprof::inject

// _exit and _Exit interposed (LD_PRELOAD): exit handlers do not run there,
// so the run is finished here, with the code, before the real call. A torchrun
// rank that dies with os._exit(3) thus leaves "failed, exit 3" in its run.
// Normal exits (exit(), return from main) are finished by lifecycle.cpp's
// on_exit handler, which is told the status. kill() too, for a process
// that ends itself with a signal it left at its default action.
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "hook_guard.h"
#include "process_owner.h"
#include "recording_state.h"
#include "writer.h"

namespace gcprof::inject {
namespace {

using ExitFn = void (*)(int);
using KillFn = int (*)(pid_t, int);
pid_t g_owner = 0;
// Resolved at start-up, not when the process is on its way out: dlsym takes
// the loader's lock and may allocate, and _exit is called where neither is
// safe (a vfork child, after a crash, from a signal handler).
ExitFn g_real_exit = nullptr;
ExitFn g_real_Exit = nullptr;
KillFn g_real_kill = nullptr;

__attribute__((constructor)) void startUpExitHooks() {
  HookGuard guard;
  g_owner = getpid();
  g_real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  g_real_Exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
  g_real_kill = reinterpret_cast<KillFn>(dlsym(RTLD_NEXT, "kill"));
}

// _exit skips the exit handlers, where the run is normally finished: finish
// it here, briefly (the process is on its way out; a rank's peers are waiting).
[[noreturn]] void immediateExit(ExitFn real, int code) {
  if (inOwnerProcess() && !recordingState().disabled.load()) {
    stopWriter(code == 0 ? "complete" : "failed", 5000, code);
    recordingState().disabled.store(true);
  }
  if (real) real(code);
  syscall(SYS_exit_group, code);  // what _exit does, had it not been found
  __builtin_trap();
}

// Python ends a job that KeyboardInterrupt stopped by signal(SIGINT, SIG_DFL)
// then kill(getpid(), SIGINT), after its finalisation and without the exit
// handlers; our SIGINT handler is not there (Python's own is, lifecycle.cpp).
// The run is finished here, as the handler would have: a recording stopped
// with Ctrl-C keeps its last steps. Only a signal that will end the process:
// at its default action and not blocked by the calling thread (a thread that
// sigwait()s for it blocks it).
void beforeSelfKill(pid_t pid, int sig) {
  if ((sig != SIGINT && sig != SIGTERM) || pid != getpid() || !inOwnerProcess() ||
      recordingState().disabled.load())
    return;
  struct sigaction action;
  sigset_t blocked;
  if (sigaction(sig, nullptr, &action) != 0 || action.sa_handler != SIG_DFL) return;
  if (pthread_sigmask(SIG_BLOCK, nullptr, &blocked) != 0 || sigismember(&blocked, sig)) return;
  stopWriter("interrupted", config().flush_wait_ms, 128 + sig);
  recordingState().disabled.store(true);
}

}  // namespace

bool inOwnerProcess() { return g_owner != 0 && getpid() == g_owner; }

}  // namespace gcprof::inject

extern "C" {

__attribute__((visibility("default"), noreturn)) void _exit(int code) noexcept {
  gcprof::inject::immediateExit(gcprof::inject::g_real_exit, code);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int code) noexcept {
  gcprof::inject::immediateExit(gcprof::inject::g_real_Exit, code);
}

__attribute__((visibility("default"))) int kill(pid_t pid, int sig) noexcept {
  gcprof::inject::beforeSelfKill(pid, sig);
  if (gcprof::inject::g_real_kill) return gcprof::inject::g_real_kill(pid, sig);
  return static_cast<int>(syscall(SYS_kill, pid, sig));
}

}  // extern "C"

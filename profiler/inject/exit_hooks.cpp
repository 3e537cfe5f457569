// _exit and _Exit interposed (LD_PRELOAD): exit handlers do not run there,
// so the run is finished here, with the code, before the real call. A torchrun
// rank that dies with os._exit(3) thus leaves "failed, exit 3" in its run.
// Normal exits (exit(), return from main) are finished by lifecycle.cpp's
// on_exit handler, which is told the status.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hook_guard.h"
#include "process_owner.h"
#include "recording_state.h"
#include "writer.h"

namespace gcprof::inject {
namespace {

using ExitFn = void (*)(int);
pid_t g_owner = 0;
// Resolved at start-up, not when the process is on its way out: dlsym takes
// the loader's lock and may allocate, and _exit is called where neither is
// safe (a vfork child, after a crash, from a signal handler).
ExitFn g_real_exit = nullptr;
ExitFn g_real_Exit = nullptr;

__attribute__((constructor)) void startUpExitHooks() {
  HookGuard guard;
  g_owner = getpid();
  g_real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
  g_real_Exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_Exit"));
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

}  // extern "C"

// exit/_exit/_Exit interposed: note the code, finish the run for _exit
// (atexit handlers do not run there), then call the real function.
#include "exit_hooks.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>

#include "recording_state.h"
#include "writer.h"

namespace gcprof::inject {
namespace {

std::atomic<int> g_code{0};
// A vfork child (posix_spawn, subprocess) shares our memory and calls _exit
// when its exec fails: it must not touch the recording of the process it
// borrowed the memory from. Only the process the injector started in does.
pid_t g_owner = 0;
__attribute__((constructor)) void noteOwner() { g_owner = getpid(); }
bool isOwner() { return g_owner != 0 && getpid() == g_owner; }

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// _exit skips atexit, where the run is normally finished: finish it here,
// briefly (the process is on its way out; a rank's peers are waiting).
[[noreturn]] void immediateExit(const char* name, int code) {
  if (isOwner() && !recordingState().disabled.load()) {
    g_code.store(code);
    stopWriter(code == 0 ? "complete" : "failed", 5000, code);
    recordingState().disabled.store(true);
  }
  using ExitFn = void (*)(int);
  if (ExitFn f = real<ExitFn>(name)) f(code);
  __builtin_trap();
}

}  // namespace

int exitCodeSeen() { return g_code.load(); }

}  // namespace gcprof::inject

extern "C" {

__attribute__((visibility("default"), noreturn)) void exit(int code) noexcept {
  if (gcprof::inject::isOwner()) gcprof::inject::g_code.store(code);
  using ExitFn = void (*)(int);
  static ExitFn real_exit = gcprof::inject::real<ExitFn>("exit");
  real_exit(code);
  __builtin_trap();
}

__attribute__((visibility("default"), noreturn)) void _exit(int code) noexcept {
  gcprof::inject::immediateExit("_exit", code);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int code) noexcept {
  gcprof::inject::immediateExit("_Exit", code);
}

}  // extern "C"

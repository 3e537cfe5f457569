// _exit and _Exit interposed (LD_PRELOAD): exit handlers do not run there,
// so the run is finished here, with the code, before the real call. A torchrun
// rank that dies with os._exit(3) thus leaves "failed, exit 3" in its run.
// Normal exits (exit(), return from main) are finished by lifecycle.cpp's
// on_exit handler, which is told the status.
#include <dlfcn.h>
#include <unistd.h>

#include "recording_state.h"
#include "writer.h"

namespace gcprof::inject {
namespace {

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

// _exit skips the exit handlers, where the run is normally finished: finish
// it here, briefly (the process is on its way out; a rank's peers are waiting).
[[noreturn]] void immediateExit(const char* name, int code) {
  if (isOwner() && !recordingState().disabled.load()) {
    stopWriter(code == 0 ? "complete" : "failed", 5000, code);
    recordingState().disabled.store(true);
  }
  using ExitFn = void (*)(int);
  if (ExitFn f = real<ExitFn>(name)) f(code);
  __builtin_trap();
}

}  // namespace

}  // namespace gcprof::inject

extern "C" {

__attribute__((visibility("default"), noreturn)) void _exit(int code) noexcept {
  gcprof::inject::immediateExit("_exit", code);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int code) noexcept {
  gcprof::inject::immediateExit("_Exit", code);
}

}  // extern "C"

// The exec family interposed (LD_PRELOAD): an exec replaces the process
// image without running exit handlers, and the events still in the writer's
// buffers would go with it. Before the real call, the writer writes all of
// them and ends what the image held (writer.h, flushBeforeExec); the exec'd
// image, preloaded again, numbers its ranges on after these in the same run
// (the process `gcprof record` started keeps its run across exec).
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "config.h"
#include "hook_guard.h"
#include "process_owner.h"
#include "recording_state.h"
#include "writer.h"

namespace gcprof::inject {
namespace {

using ExecveFn = int (*)(const char*, char* const[], char* const[]);
using ExecvFn = int (*)(const char*, char* const[]);
using FexecveFn = int (*)(int, char* const[], char* const[]);
using ExecveatFn = int (*)(int, const char*, char* const[], char* const[], int);

// Resolved at start-up: a vfork child calls exec, and must not take the
// loader's lock or allocate.
ExecveFn g_execve, g_execvpe;
ExecvFn g_execv, g_execvp;
FexecveFn g_fexecve;
ExecveatFn g_execveat;

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

__attribute__((constructor)) void startUpExecHooks() {
  HookGuard guard;
  g_execve = next<ExecveFn>("execve");
  g_execvpe = next<ExecveFn>("execvpe");
  g_execv = next<ExecvFn>("execv");
  g_execvp = next<ExecvFn>("execvp");
  g_fexecve = next<FexecveFn>("fexecve");
  g_execveat = next<ExecveatFn>("execveat");
}

// Around one exec: flush before, resume recording when it failed (it
// returned). Only the recorded process itself: a vfork or fork child never
// writes into its parent's run.
class ExecFlush {
 public:
  ExecFlush() {
    if (inOwnerProcess() && recording()) flushed_ = flushBeforeExec(config().flush_wait_ms);
  }
  ~ExecFlush() {
    if (flushed_) resumeAfterFailedExec();
  }
  ExecFlush(const ExecFlush&) = delete;
  ExecFlush& operator=(const ExecFlush&) = delete;

 private:
  bool flushed_ = false;
};

int notFound() {
  errno = ENOSYS;
  return -1;
}

// execl, execlp and execle take their arguments on the stack: gather them
// into an argv (and the envp after it, for execle).
template <typename Exec>
int withArgv(const char* arg, va_list ap, bool with_env, Exec exec) {
  va_list count;
  va_copy(count, ap);
  size_t n = 1;
  while (va_arg(count, char*)) ++n;
  va_end(count);
  char** argv = static_cast<char**>(__builtin_alloca((n + 1) * sizeof(char*)));
  argv[0] = const_cast<char*>(arg);
  for (size_t i = 1; i <= n; ++i) argv[i] = va_arg(ap, char*);  // the last is the NULL
  char* const* envp = with_env ? va_arg(ap, char* const*) : environ;
  return exec(argv, envp);
}

}  // namespace
}  // namespace gcprof::inject

using namespace gcprof::inject;

extern "C" {
#define GCPROF_EXPORT __attribute__((visibility("default")))

GCPROF_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
  ExecFlush flush;
  return g_execve ? g_execve(path, argv, envp) : notFound();
}
GCPROF_EXPORT int execv(const char* path, char* const argv[]) {
  ExecFlush flush;
  return g_execv ? g_execv(path, argv) : notFound();
}
GCPROF_EXPORT int execvp(const char* file, char* const argv[]) {
  ExecFlush flush;
  return g_execvp ? g_execvp(file, argv) : notFound();
}
GCPROF_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
  ExecFlush flush;
  return g_execvpe ? g_execvpe(file, argv, envp) : notFound();
}
GCPROF_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
  ExecFlush flush;
  return g_fexecve ? g_fexecve(fd, argv, envp) : notFound();
}
GCPROF_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[],
                           int flags) {
  ExecFlush flush;
  return g_execveat ? g_execveat(dirfd, path, argv, envp, flags) : notFound();
}
GCPROF_EXPORT int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  ExecFlush flush;
  int rc = withArgv(arg, ap, false, [&](char* const* argv, char* const*) {
    return g_execv ? g_execv(path, argv) : notFound();
  });
  va_end(ap);
  return rc;
}
GCPROF_EXPORT int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  ExecFlush flush;
  int rc = withArgv(arg, ap, false, [&](char* const* argv, char* const*) {
    return g_execvp ? g_execvp(file, argv) : notFound();
  });
  va_end(ap);
  return rc;
}
GCPROF_EXPORT int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  ExecFlush flush;
  int rc = withArgv(arg, ap, true, [&](char* const* argv, char* const* envp) {
    return g_execve ? g_execve(path, argv, envp) : notFound();
  });
  va_end(ap);
  return rc;
}
}  // extern "C"

#include "attach_injection.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "attach_target.h"
#include "trace_store.h"

namespace gcprof::cli {
namespace {

constexpr int kGdbTimeoutS = 120;
// How long the job may run without entering malloc or free before gdb is
// interrupted and the attach given up: a training job allocates every step.
// GCPROF_ATTACH_SAFE_POINT_S shortens it for tests.
int safePointTimeoutS() {
  const char* s = std::getenv("GCPROF_ATTACH_SAFE_POINT_S");
  int v = s ? std::atoi(s) : 0;
  return v > 0 && v < kGdbTimeoutS ? v : 30;
}

// Only libc's symbols are read (auto-solib-add off): reading LibTorch's
// would take gdb many seconds and gigabytes. A signal inside a called
// function unwinds it instead of leaving the job stopped in it.
//
// dlopen allocates, so it must not run in a thread that gdb stopped inside
// malloc: that thread holds its arena's lock and would wait on itself for
// ever. gdb lets the job run to the entry of malloc or free (no lock held
// there), removes the breakpoints and calls dlopen in that thread. Signals
// the job receives meanwhile pass to it unseen.
//
// Not an entry the dynamic loader's own code called (ld.so's functions, or
// libc's dlopen/dlsym/dlerror and the inline ones under them): dlopen and
// dlsym would run inside a call of the same machinery. The job's dlsym frees
// the thread's previous error text before it clears it; a dlopen called at
// that free freed the same text again and the job aborted ("double free
// detected in tcache 2"; gcprof.h looks its functions up at every step while
// unrecorded, so a LibTorch job using it does this at each step). gdb reads
// ld.so's symbols too so that its functions have names here; two callers
// are looked at, as ld.so reaches malloc through an inline wrapper of that
// name. A caller in an object whose symbols gdb has not read has no name
// (gdb's own $_any_caller_matches fails on it).
std::string gdbScript(const std::string& library, const std::string& request) {
  return "set confirm off\n"
         "set pagination off\n"
         "set unwindonsignal on\n"
         "handle all nostop noprint pass\n"
         "sharedlibrary libc\\.so\n"
         "sharedlibrary /ld-linux\n"
         "sharedlibrary /ld64\\.so\n"
         "python\n"
         "import re\n"
         "class GcprofInLoader(gdb.Function):\n"
         "    def __init__(self):\n"
         "        super().__init__('gcprof_in_loader')\n"
         "    def invoke(self):\n"
         "        try:\n"
         "            f = gdb.selected_frame().older()\n"
         "            for _ in range(2):\n"
         "                if f is None:\n"
         "                    return False\n"
         "                if re.match(r'(_dl|__dl|__libc_dl|_dlerror|dl_|dlerror|dlopen|dlsym|dlclose|dladdr|dlinfo)', f.name() or ''):\n"
         "                    return True\n"
         "                f = f.older()\n"
         "        except gdb.error:\n"
         "            pass\n"
         "        return False\n"
         "GcprofInLoader()\n"
         "end\n"
         "break *malloc\n"
         "break *free\n"
         "continue\n"
         "while ((long)$pc == (long)&malloc || (long)$pc == (long)&free) && $gcprof_in_loader()\n"
         "  continue\n"
         "end\n"
         "delete\n"
         "if (long)$pc != (long)&malloc && (long)$pc != (long)&free\n"
         "  printf \"gcprof-error-safe-point\\n\"\n"
         "else\n"
         "  set $h = (void*)dlopen(\"" + library + "\", 0x102)\n"  // RTLD_NOW | RTLD_GLOBAL
         "  if $h == 0\n"
         "    printf \"gcprof-error: %s\\n\", (char*)dlerror()\n"
         "  else\n"
         "    set $f = (void*)dlsym($h, \"gcprof_attach_start\")\n"
         "    if $f == 0\n"
         "      printf \"gcprof-error: %s\\n\", (char*)dlerror()\n"
         "    else\n"
         "      printf \"gcprof-start: %d\\n\", ((int(*)(const char*))$f)(\"" + request + "\")\n"
         "    end\n"
         "  end\n"
         "end\n"
         "detach\n"
         "quit\n";
}

std::string lastLines(const std::string& text, int n) {
  size_t at = text.size();
  for (int i = 0; i <= n && at != std::string::npos && at > 0; ++i) at = text.rfind('\n', at - 1);
  return at == std::string::npos ? text : text.substr(at + 1);
}

}  // namespace

void injectAttachLibrary(const std::string& gdb, pid_t pid, const std::string& library,
                         const std::string& request, const std::string& scratch_dir) {
  for (const std::string& s : {library, request})
    if (s.find_first_of("\"\\\n") != std::string::npos)
      throw std::runtime_error("cannot pass '" + s + "' to gdb (quote or backslash in it)");
  std::string script = scratch_dir + "/inject.gdb", log = scratch_dir + "/gdb.log";
  std::ofstream(script) << gdbScript(library, request);
  pid_t child = fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    setenv("DEBUGINFOD_URLS", "", 1);  // never download symbols
    std::string p = std::to_string(pid);
    execl(gdb.c_str(), gdb.c_str(), "-q", "-nx", "-batch", "-iex", "set auto-solib-add off",
          "-p", p.c_str(), "-x", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  const int safe_point_s = safePointTimeoutS();
  Ns start = monotonicNs();
  bool interrupted = false;
  while (waitpid(child, &status, WNOHANG) == 0) {
    Ns waited = monotonicNs() - start;
    if (!interrupted && waited > static_cast<Ns>(safe_point_s) * 1000000000) {
      // gdb stops the job where it is; its script then sees no safe point,
      // calls nothing and detaches.
      interrupted = true;
      kill(child, SIGINT);
    }
    if (waited > static_cast<Ns>(kGdbTimeoutS) * 1000000000) {
      // Killing gdb in the middle of a call could leave the job in it:
      // report and leave gdb to finish rather.
      throw std::runtime_error("gdb did not finish within " + std::to_string(kGdbTimeoutS) +
                               " s (pid " + std::to_string(child) + "); see " + log);
    }
    usleep(20000);
  }
  std::ifstream in(log);
  std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (out.find("gcprof-start: 0") != std::string::npos) return;
  if (out.find("Operation not permitted") != std::string::npos)
    throw AttachRefused(ptraceRefusedAdvice());
  // gdb-minimal: the safe point needs gdb's Python (the loader's callers).
  if (out.find("Python scripting is not supported") != std::string::npos)
    throw AttachRefused("gdb (" + gdb + ") has no Python, which gcprof needs to find a moment safe "
                        "to load itself; install Debian's full gdb: apt-get install gdb");
  size_t e = out.find("gcprof-error: ");
  if (e != std::string::npos)
    throw std::runtime_error("dlopen of " + library + " in the job failed: " +
                             out.substr(e + 14, out.find('\n', e) - e - 14));
  if (interrupted || out.find("gcprof-error-safe-point") != std::string::npos)
    throw AttachRefused("the job entered neither malloc nor free within " +
                        std::to_string(safe_point_s) +
                        " s, so gcprof found no moment safe to load itself (an idle or hung "
                        "job); attach while it trains");
  if (out.find("gcprof-start: -1") != std::string::npos)
    throw AttachRefused("gcprof is attached to this process already");
  throw std::runtime_error("gdb could not load gcprof into the job (" + log + "): " +
                           lastLines(out, 3));
}

}  // namespace gcprof::cli

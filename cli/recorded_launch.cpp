#include "recorded_launch.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "process_tree.h"
#include "run_environment.h"
#include "trace_store.h"
#include "utf8_text.h"

extern char** environ;

namespace gcprof::cli {
namespace {

std::string exeDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  std::string p = buf;
  return p.substr(0, p.rfind('/'));
}

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}


// In the child, between fork and exec.
[[noreturn]] void execJob(const LaunchOptions& o, const std::string& inject, long long run_id,
                          pid_t parent) {
  // If `gcprof record` itself is killed (SIGKILL reaches only it), the job
  // must not run on unrecorded and unwaited: it gets SIGTERM, which the
  // injector turns into a flushed, `interrupted` run.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(128 + SIGTERM);  // it died before prctl
  if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) {
    std::fprintf(stderr, "gcprof: cannot enter %s: %s\n", o.cwd.c_str(), strerror(errno));
    _exit(127);
  }
  prependPath("LD_PRELOAD", inject, ':');
  setenv("NVTX_INJECTION64_PATH", inject.c_str(), 1);
  if (o.backend != "host") setenv("CUDA_INJECTION64_PATH", inject.c_str(), 1);
  // The job keeps the allocator it runs with in production unless asked:
  // `--cuda-allocator async` switches PyTorch to its stream-ordered
  // allocator, every tensor a cudaMallocAsync that CUPTI sees (docs/cuda.md
  // says what this changes in the job). A setting of the user's own wins.
  if (o.backend != "host" && o.cuda_allocator == "async" && !getenv("PYTORCH_CUDA_ALLOC_CONF"))
    setenv("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", 1);
  std::string shim = pythonShimDir();
  if (!shim.empty()) prependPath("PYTHONPATH", shim, ':');
  setenv("GCPROF_DB", o.trace.c_str(), 1);
  setenv("GCPROF_MIN_BYTES", std::to_string(o.min_bytes).c_str(), 1);
  setenv("GCPROF_BACKEND", o.backend.c_str(), 1);
  if (!o.steps.empty()) setenv("GCPROF_STEPS", o.steps.c_str(), 1);
  setenv("GCPROF_FLUSH_WAIT_MS", std::to_string(o.flush_wait_ms).c_str(), 1);
  if (o.paused) setenv("GCPROF_PAUSED", "1", 1);
  if (!o.name.empty()) setenv("GCPROF_RUN_NAME", o.name.c_str(), 1);
  setenv("GCPROF_ROOT_PID", std::to_string(getpid()).c_str(), 1);
  setenv("GCPROF_RUN_ID", std::to_string(run_id).c_str(), 1);
  // Every process of a verification job (each rank torchrun starts) links
  // its run to the baseline and the plan, not only the one we start.
  if (o.baseline_run > 0) setenv("GCPROF_BASELINE_RUN", std::to_string(o.baseline_run).c_str(), 1);
  if (o.plan_id > 0) setenv("GCPROF_PLAN_ID", std::to_string(o.plan_id).c_str(), 1);
  for (const auto& [k, v] : o.extra_env) setenv(k.c_str(), v.c_str(), 1);
  if (o.job_stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO);
  std::vector<char*> args;
  for (const std::string& a : o.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "gcprof: cannot run '%s': %s\n", args[0], strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

// NAME's value in `env` (NAME=VALUE, null-ended) as a number; -1 when unset.
int envInt(char** env, const char* name) {
  size_t n = strlen(name);
  for (char** kv = env; *kv; ++kv)
    if (strncmp(*kv, name, n) == 0 && (*kv)[n] == '=' && (*kv)[n + 1]) return atoi(*kv + n + 1);
  return -1;
}

pid_t g_child = 0;
void forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// Where this gcprof runs from. Installed (cmake --install, a wheel, the
// Debian package): <prefix>/bin/gcprof with the injector in <prefix>/<libdir>
// and the shim in <prefix>/<datadir>/gcprof/python, so a moved or copied
// prefix keeps working. In the build tree: build/bin/gcprof, build/lib, and
// the shim straight from the source tree, which an installed gcprof never
// looks at (a stale checkout must not stand in for a missing install).
bool runsFromBuildTree() {
  char real[PATH_MAX];
  return realpath(GCPROF_BUILD_BIN_DIR, real) && exeDir() == real;
}

std::vector<std::string> injectorCandidates() {
  return {exeDir() + "/../" GCPROF_INSTALL_LIBDIR "/libgcprof_inject.so",
          exeDir() + "/../lib/libgcprof_inject.so", exeDir() + "/libgcprof_inject.so"};
}

std::vector<std::string> shimCandidates() {
  std::vector<std::string> dirs = {exeDir() + "/../" GCPROF_INSTALL_DATADIR "/gcprof/python"};
  if (runsFromBuildTree()) dirs.push_back(GCPROF_PYTHON_DIR);
  return dirs;
}

// A disk too full for even a short recording: refuse before the job starts
// (docs/recording.md) instead of running it and keeping nothing. A disk that
// fills up later stops the recording, never the job (writer.cpp).
void requireFreeSpace(const std::string& trace) {
  size_t slash = trace.rfind('/');
  std::string dir = slash == std::string::npos || slash == 0 ? "/" : trace.substr(0, slash);
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) != 0) return;  // TraceStore says what is wrong with it
  unsigned long long free_bytes = static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes >= kMinFreeBytes) return;
  throw std::runtime_error(trace + ": only " + std::to_string(free_bytes / 1024) +
                           " KiB free on its disk; a recording needs at least " +
                           std::to_string(kMinFreeBytes >> 20) +
                           " MiB. Free some space or record elsewhere (-o)");
}

}  // namespace

// After the job: each new run's exit code and final status (below).
static void finishRuns(const LaunchOptions& o, long long before, long long root_run, pid_t pid,
                       LaunchResult& r);

RunInfo jobRunInfo(const std::vector<std::string>& argv, const std::string& cwd,
                   char** env) {
  RunInfo run;
  // As text for show and verify; the job itself gets its argv byte for byte.
  std::vector<std::string> shown;
  for (const std::string& arg : argv) shown.push_back(validUtf8(arg));
  run.command = nlohmann::json(shown).dump();
  run.cwd = cwd;
  run.env = relevantEnvironmentJson(env);
  // A process started as one rank by hand (multi-node without torchrun on
  // our side) says so in its environment, like torchrun's children do.
  run.rank = envInt(env, "RANK");
  run.local_rank = envInt(env, "LOCAL_RANK");
  run.world_size = envInt(env, "WORLD_SIZE");
  return run;
}

std::string absolutePath(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  return std::string(getcwd(cwd, sizeof cwd) ? cwd : ".") + "/" + p;
}

std::string pythonShimDir() {
  for (const std::string& p : shimCandidates())
    if (exists(p + "/sitecustomize.py")) return p;
  return "";
}

std::string injectorPath() {
  for (const std::string& p : injectorCandidates())
    if (exists(p)) {
      char real[PATH_MAX];
      return realpath(p.c_str(), real) ? real : p;
    }
  return "";
}

namespace {

// The injector this gcprof preloads; throws, naming where it looked, when
// there is none. A missing python shim only warns: a broken install still
// records, allocations only.
std::string requireInjector() {
  std::string inject = injectorPath();
  if (inject.empty()) {
    std::string looked;
    for (const std::string& p : injectorCandidates()) looked += (looked.empty() ? "" : ", ") + p;
    throw std::runtime_error("libgcprof_inject.so not found (looked in " + looked +
                             "); build it (cmake --build build) or reinstall gcprof");
  }
  if (pythonShimDir().empty())
    std::fprintf(stderr,
                 "gcprof: python shim not found (looked in %s); python jobs are recorded without "
                 "module ranges and GCPROF_PLAN is not applied\n",
                 shimCandidates().front().c_str());
  return inject;
}

// The root process's run, made before the job starts so that it exists
// whatever happens to the job; the injector fills it in. `before`: the
// newest run already in the trace.
long long createRootRun(const LaunchOptions& o, long long* before) {
  TraceStore store(o.trace, TraceStore::Mode::ReadWrite);  // creates and checks the schema
  *before = store.maxRunId();
  char cwd[PATH_MAX];
  RunInfo run = jobRunInfo(o.argv, !o.cwd.empty() ? o.cwd : (getcwd(cwd, sizeof cwd) ? cwd : ""), environ);
  run.name = o.name;
  run.backend = o.backend == "cuda" ? "cuda" : "host";
  run.started = monotonicNs();
  run.min_bytes = o.min_bytes;
  run.baseline_run = o.baseline_run;
  run.plan_id = o.plan_id;
  return store.createRun(run);
}

void waitUntilEnded(pid_t pid, int* status) {
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

// Waits for the job, ending it and its processes once it runs past
// --timeout (a rank waiting for a peer that died never ends by itself).
// True when it was ended so.
bool waitForJob(const LaunchOptions& o, pid_t pid, int* status) {
  if (o.timeout_s <= 0) {
    waitUntilEnded(pid, status);
    return false;
  }
  Ns deadline = monotonicNs() + static_cast<Ns>(o.timeout_s) * 1000000000;
  for (;;) {
    pid_t done = waitpid(pid, status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return false;
    if (monotonicNs() > deadline) break;
    usleep(100000);
  }
  std::fprintf(stderr, "gcprof: the job ran past %d s; ending it and its processes\n", o.timeout_s);
  // SIGKILL only after the processes had their --flush-wait to write
  // what they recorded, and a little more.
  terminateTree(pid, std::max(10000, o.flush_wait_ms + 5000));
  waitUntilEnded(pid, status);
  return true;
}

// Like a shell while the job runs: the terminal's SIGINT reaches the job
// directly (same process group); we only pass on what is sent to us alone.
class ForwardedSignals {
 public:
  explicit ForwardedSignals(pid_t child) {
    g_child = child;
    struct sigaction ign{}, fwd{};
    ign.sa_handler = SIG_IGN;
    fwd.sa_handler = forward;
    sigaction(SIGINT, &ign, &old_int_);
    sigaction(SIGQUIT, &ign, &old_quit_);
    sigaction(SIGTERM, &fwd, &old_term_);
  }
  ~ForwardedSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGQUIT, &old_quit_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    g_child = 0;
  }
  ForwardedSignals(const ForwardedSignals&) = delete;
  ForwardedSignals& operator=(const ForwardedSignals&) = delete;

 private:
  struct sigaction old_int_{}, old_term_{}, old_quit_{};
};

}  // namespace

LaunchResult launchRecorded(const LaunchOptions& o) {
  if (o.argv.empty()) throw std::runtime_error("no command to record (give it after --)");
  std::string inject = requireInjector();
  requireFreeSpace(o.trace);
  long long before = 0;
  long long root_run = createRootRun(o, &before);
  // A .ctl left by an earlier recording's `gcprof ctl` would pause this one
  // from its first poll; this recording starts as --paused says.
  unlink((o.trace + ".ctl").c_str());
  std::fflush(nullptr);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + strerror(errno));
  if (pid == 0) execJob(o, inject, root_run, parent);

  LaunchResult r;
  int status = 0;
  {
    ForwardedSignals forwarded(pid);
    r.timed_out = waitForJob(o, pid, &status);
  }
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  } else {
    r.exit_code = WEXITSTATUS(status);
  }
  // The injector marks its runs complete on a normal exit; here we add what
  // only the parent knows: the exit code, and runs cut short. A trace we can
  // no longer write (a full disk) must not change the job's exit code.
  try {
    finishRuns(o, before, root_run, pid, r);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gcprof: %s; the runs' final status was not written\n", e.what());
  }
  return r;
}

static void finishRuns(const LaunchOptions& o, long long before, long long root_run, pid_t pid,
                       LaunchResult& r) {
  TraceStore store(o.trace, TraceStore::Mode::ReadWrite);
  for (RunInfo run : store.runs()) {
    // Ours: the root's run and its descendants' (linked by job_run). Another
    // `record` or `verify` writing into the same trace at the same time owns
    // the other new runs.
    if (run.id <= before || (run.id != root_run && run.job_run != root_run)) continue;
    r.runs.push_back(run.id);
    if (run.id == root_run) {
      r.root_run = root_run;
      run.pid = pid;
      run.exit_code = r.exit_code;
      if (r.signal) run.status = "interrupted";
      else if (r.exit_code != 0) run.status = "failed";
      else if (run.status == "running") run.status = "complete";
    } else if (run.status == "running") {
      run.status = "interrupted";
    }
    if (run.ended == 0) run.ended = monotonicNs();
    store.updateRun(run);
  }
}

void prependPath(const char* var, const std::string& value, char sep) {
  const char* old = getenv(var);
  std::string v = old && *old ? value + sep + old : value;
  setenv(var, v.c_str(), 1);
}

}  // namespace gcprof::cli

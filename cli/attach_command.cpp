// gcprof attach PID: record a training job that is already running, then
// detach and leave it running (docs/recording.md, "Attach").
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sqlite3.h>

#include "attach_injection.h"
#include "attach_target.h"
#include "process_tree.h"
#include "commands.h"
#include "recorded_launch.h"
#include "session_folder.h"
#include "size_parse.h"
#include "trace_store.h"

namespace gcprof::cli {
namespace {

struct AttachArgs {
  pid_t pid = 0;
  std::string output = "gcprof.db";
  long long steps = 0;
  double duration = 0;
  std::string name;
  std::string min_bytes = "1KiB";
  std::string backend = "auto";
  bool detach = false;
};

volatile sig_atomic_t g_signals = 0;
void onSignal(int) { g_signals = g_signals + 1; }

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The rest of the state file's line that starts with `key` ("" when none).
std::string stateValue(const std::string& state, const std::string& key) {
  size_t at = state.find("\n" + key);
  if (at == std::string::npos) return "";
  at += 1 + key.size();
  return state.substr(at, state.find('\n', at) - at);
}


// Where a session's files are, found again by `attach --detach PID`.
std::string sessionDir(pid_t pid) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/gcprof-attach-" + std::to_string(pid);
}

pid_t sessionOwner(const std::string& dir) {
  return static_cast<pid_t>(std::atoll(readAll(dir + "/cli").c_str()));
}

void refuseIfAttached(const AttachTarget& t, const std::string& dir) {
  pid_t owner = sessionOwner(dir);
  if (owner > 0 && running(owner))
    throw AttachRefused("process " + std::to_string(t.pid) + " is attached already (by gcprof pid " +
                        std::to_string(owner) + "); detach it with `gcprof attach --detach " +
                        std::to_string(t.pid) + "`");
  if (t.loaded_before)
    throw AttachRefused("gcprof was attached to process " + std::to_string(t.pid) +
                        " before; attaching twice to one process is not supported");
}

void makeSessionDir(const AttachTarget& t, const std::string& dir) {
  attach_session::removeFolder(dir);
  if (mkdir(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot create " + dir + ": " + std::strerror(errno));
  std::ofstream(dir + "/cli") << getpid() << "\n";
  std::ofstream(dir + "/ctl").flush();
  // A root gcprof attaching a user's job: the job reads and writes these.
  if (geteuid() == 0 && t.uid != 0)
    for (const char* f : {"", "/ctl", "/cli"})
      if (chown((dir + f).c_str(), t.uid, static_cast<gid_t>(-1)) != 0) {
      }
}

// The run is made here, with what a re-run (`verify`) needs, read from /proc.
long long createRun(const AttachTarget& t, const std::string& trace, const AttachArgs& a,
                    long long min_bytes) {
  TraceStore store(trace, TraceStore::Mode::ReadWrite);
  std::vector<char*> env;
  for (const std::string& kv : t.env) env.push_back(const_cast<char*>(kv.c_str()));
  env.push_back(nullptr);
  RunInfo run = jobRunInfo(t.argv, t.cwd, env.data());
  run.name = a.name;
  run.backend = "host";
  run.pid = t.pid;
  run.started = monotonicNs();
  run.min_bytes = min_bytes;
  return store.createRun(run);
}

std::string writeRequest(const std::string& dir, const std::string& trace, long long run,
                         long long min_bytes, const AttachArgs& a, const AttachTarget& t) {
  std::string path = dir + "/request";
  std::ofstream out(path);
  out << "db=" << trace << "\nrun_id=" << run << "\nmin_bytes=" << min_bytes
      << "\nsteps=" << a.steps << "\nduration_ms=" << static_cast<long long>(a.duration * 1000)
      << "\ncli_pid=" << getpid() << "\nctl=" << dir << "/ctl\nstate=" << dir << "/state\n"
      << "backend=" << a.backend << "\n";
  if (t.python) out << "shim=" << pythonShimDir() << "\n";
  return path;
}

// Until the session ends: the job's state file, the job itself, our signals.
std::string waitForSession(const AttachArgs& a, const std::string& dir, bool& attached) {
  bool asked = false;
  Ns start = monotonicNs();
  for (;;) {
    std::string state = readAll(dir + "/state");
    if (state.rfind("failed:", 0) == 0 || state.rfind("detached", 0) == 0) return state;
    if (!attached && state.rfind("attached", 0) == 0) {
      attached = true;
      std::fprintf(stderr, "gcprof: attached to pid %d (%s); recording into %s %s\n", a.pid,
                   state.substr(0, state.find('\n')).c_str(), a.output.c_str(),
                   a.steps > 0 ? ("for " + std::to_string(a.steps) + " steps").c_str()
                               : "until Ctrl-C or `gcprof attach --detach PID`");
      std::string why = stateValue(state, "cuda_off=");
      if (!why.empty())
        std::fprintf(stderr, "gcprof: CUDA backend off: %s\n", why.c_str());
      // The state line's heap_regions_skipped=N (attach/session.cpp).
      const std::string key = " heap_regions_skipped=";
      size_t at = state.find(key);
      long skipped =
          at == std::string::npos ? 0 : std::strtol(state.c_str() + at + key.size(), nullptr, 10);
      if (skipped > 0)
        std::fprintf(stderr,
                     "gcprof: warning: %ld of the job's heaps changed too fast to be read at "
                     "attach: the memory they held before attach is not in the run, whose "
                     "peaks are that much too low\n",
                     skipped);
    }
    if (!running(a.pid)) return "ended";
    if (g_signals > 1) return "abandoned";
    if (g_signals == 1 && !asked) {
      asked = true;
      std::ofstream(dir + "/ctl") << "detach\n";
      std::fprintf(stderr, "gcprof: detaching from pid %d (again to leave it at once)\n", a.pid);
    }
    if (!attached && monotonicNs() - start > 120 * 1000000000LL) {
      std::ofstream(dir + "/ctl") << "detach\n";
      return "failed: the job did not report attached within 120 s";
    }
    usleep(20000);
  }
}

long long recordedSteps(TraceStore& store, long long run) {
  sqlite3_stmt* q = nullptr;
  long long n = 0;
  if (sqlite3_prepare_v2(store.handle(), "SELECT count(*) FROM steps WHERE run = ?", -1, &q,
                         nullptr) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, run);
    if (sqlite3_step(q) == SQLITE_ROW) n = sqlite3_column_int64(q, 0);
  }
  sqlite3_finalize(q);
  return n;
}

void finishRun(const std::string& trace, long long id, const AttachArgs& a,
               const std::string& outcome) {
  TraceStore store(trace, TraceStore::Mode::ReadWrite);
  RunInfo run = store.run(id);
  run.pid = a.pid;
  if (run.status == "running") run.status = "interrupted";  // the job died, or we were left
  if (run.ended == 0) run.ended = monotonicNs();
  store.updateRun(run);
  std::fprintf(stderr, "gcprof: run %lld (%s, pid %d) recorded into %s; %s\n", id,
               run.status.c_str(), a.pid, a.output.c_str(), outcome.c_str());
  // A job that ends (or is detached) before --steps N is reached leaves a
  // "complete" run with fewer steps: say so, rather than let the count pass
  // for the one asked.
  long long steps = recordedSteps(store, id);
  if (a.steps > 0 && steps < a.steps)
    std::fprintf(stderr, "gcprof: only %lld of the %lld steps asked for were recorded (%s)\n",
                 steps, a.steps, outcome.c_str());
}

// What became of the job, in words, from how waitForSession ended.
std::string outcomeText(const std::string& outcome, bool attached) {
  if (outcome == "ended")
    return attached ? "the job ended while attached" : "the job ended before the attach completed";
  // The injector writes "detached status=exited" when the job exits while
  // attached (session.cpp): it did not continue.
  if (outcome.find("status=exited") != std::string::npos) return "the job ended while attached";
  if (outcome == "abandoned") return "left to detach by itself";
  if (outcome.rfind("detached", 0) == 0) return "detached, the job continues";
  return "nothing recorded";
}

int detachOther(pid_t pid) {
  std::string dir = sessionDir(pid);
  pid_t owner = sessionOwner(dir);
  if (owner <= 0 || !running(owner)) {
    std::fprintf(stderr, "gcprof: no `gcprof attach` session on pid %d\n", pid);
    return 2;
  }
  std::ofstream(dir + "/ctl") << "detach\n";
  for (int i = 0; i < 600 && running(owner) && readAll(dir + "/state").rfind("detached", 0) != 0; ++i)
    usleep(100000);
  std::fprintf(stderr, "gcprof: detached from pid %d\n", pid);
  return 0;
}

int runAttach(const AttachArgs& a) {
  if (a.detach) return detachOther(a.pid);
  long long min_bytes = parseBytes(a.min_bytes);
  if (a.steps < 0 || a.duration < 0) throw std::invalid_argument("--steps and --duration must be >= 0");
  AttachTarget target = inspectTarget(a.pid);
  requirePtraceAllowed(target);
  std::string gdb = findGdb();
  std::string library = injectorPath();
  library = library.empty() ? "" : library.substr(0, library.rfind('/')) + "/libgcprof_attach.so";
  if (library.empty() || access(library.c_str(), R_OK) != 0)
    throw std::runtime_error("libgcprof_attach.so not found beside the injector; build it "
                             "(cmake --build build) or reinstall gcprof");
  std::string dir = sessionDir(a.pid);
  refuseIfAttached(target, dir);
  makeSessionDir(target, dir);
  std::string trace = absolutePath(a.output);
  long long run = createRun(target, trace, a, min_bytes);
  if (geteuid() == 0 && target.uid != 0 && chown(trace.c_str(), target.uid, static_cast<gid_t>(-1))) {
  }
  std::string request = writeRequest(dir, trace, run, min_bytes, a, target);
  struct sigaction sa{}, old_int{}, old_term{};
  sa.sa_handler = onSignal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  Ns t0 = monotonicNs();
  try {
    injectAttachLibrary(gdb, a.pid, library, request, dir);
  } catch (...) {
    finishRun(trace, run, a, "nothing recorded");
    attach_session::removeFolder(dir);
    throw;
  }
  std::fprintf(stderr, "gcprof: library loaded into pid %d in %.2f s\n", a.pid,
               (monotonicNs() - t0) / 1e9);
  bool attached = false;
  std::string outcome = waitForSession(a, dir, attached);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  int rc = 0;
  if (outcome.rfind("failed:", 0) == 0) {
    std::fprintf(stderr, "gcprof: attach to pid %d %s; the job continues unrecorded\n", a.pid,
                 outcome.substr(0, outcome.find('\n')).c_str());
    rc = 2;
  }
  finishRun(trace, run, a, outcomeText(outcome, attached));
  // Left to the job's side when it still has to detach (it reads ctl).
  if (outcome != "abandoned") attach_session::removeFolder(dir);
  return rc;
}

}  // namespace

void addAttach(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<AttachArgs>();
  CLI::App* sub = app.add_subcommand(
      "attach",
      "Record a PyTorch or LibTorch job that is already running, then detach and leave it\n"
      "running. Loads gcprof into the process with gdb (docs/recording.md, \"Attach\").");
  sub->add_option("pid", args->pid, "The job's process id")->required();
  sub->add_option("-o,--output", args->output, "Trace file (appended to when it exists)")
      ->capture_default_str();
  sub->add_option("--steps", args->steps, "Detach after this many training steps");
  sub->add_option("--duration", args->duration, "Detach after this many seconds");
  sub->add_option("--name", args->name, "A tag for this run");
  sub->add_option("--min-bytes", args->min_bytes,
                  "Smaller host allocations are only counted, not recorded one by one")
      ->capture_default_str();
  sub->add_option("--backend", args->backend,
                  "auto | host | cuda: cuda subscribes CUPTI in the job (kernels, device memory);\n"
                  "auto does when the job has loaded CUDA")
      ->check(CLI::IsMember({"auto", "host", "cuda"}))
      ->capture_default_str();
  sub->add_flag("--detach", args->detach, "End the `gcprof attach` session on PID now");
  sub->footer(
      "Examples:\n"
      "  gcprof attach 4242 -o job.db --steps 4     # 4 steps, then detach\n"
      "  gcprof attach 4242 -o job.db               # until Ctrl-C\n"
      "  gcprof attach --detach 4242                # from another shell");
  sub->callback([args, &exit_code] {
    try {
      exit_code = runAttach(*args);
    } catch (const AttachRefused& e) {
      std::fprintf(stderr, "gcprof: cannot attach: %s; nothing was changed in the job\n", e.what());
      exit_code = 2;
    }
  });
}

}  // namespace gcprof::cli

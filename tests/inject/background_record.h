// `gcprof record -- JOB` started in the background, for tests that act on a
// job while it runs (signal it, kill it, read its trace) and then wait for it
// with a deadline, so a hang fails the test instead of stalling it.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace gcprof::testing_support {

inline void pauseMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

inline double secondsNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

class BackgroundRecord {
 public:
  // Runs `gcprof record -o DB [flags] -- argv...` with stderr to DB.stderr.
  BackgroundRecord(const std::string& gcprof, const std::string& db,
                   const std::vector<std::string>& flags, const std::vector<std::string>& argv)
      : db_(db) {
    for (const char* ext : {"", "-wal", "-shm", ".ctl"}) std::remove((db + ext).c_str());
    std::vector<std::string> args = {gcprof, "record", "-o", db};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), argv.begin(), argv.end());
    std::string err = db + ".stderr";
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> c;
      for (std::string& a : args) c.push_back(a.data());
      c.push_back(nullptr);
      if (!freopen(err.c_str(), "w", stderr)) _exit(126);
      execv(c[0], c.data());
      _exit(127);
    }
  }
  ~BackgroundRecord() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }

  // The pid a job wrote to `ready` (a file it renames into place), or 0 when
  // none came within `seconds`.
  static pid_t waitForPidFile(const std::string& ready, double seconds) {
    for (double end = secondsNow() + seconds; secondsNow() < end; pauseMs(20)) {
      std::ifstream in(ready);
      long pid = 0;
      if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
    }
    return 0;
  }

  // The shell's exit code of `record` (128 + signal when killed), or -1 when
  // it is still running after `seconds` (it is then killed).
  int wait(double seconds) {
    int status = 0;
    for (double end = secondsNow() + seconds;; pauseMs(20)) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (secondsNow() > end) return -1;
    }
    reaped_ = true;
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }

  std::string stderrText() const {
    std::ifstream in(db_ + ".stderr");
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }

 private:
  std::string db_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// True once `pid` is gone or a zombie (dead, waiting for its parent).
inline bool processEnded(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  size_t close = text.rfind(')');
  return text.empty() || close == std::string::npos || text.compare(close + 2, 1, "Z") == 0;
}

}  // namespace gcprof::testing_support

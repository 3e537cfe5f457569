// Runs a call that may block for ever (opening a named pipe did) in a child
// process, for tests that it does not: the error it threw comes back, or
// "blocked for 10 s" once the child has been killed, instead of the test
// hanging.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exception>
#include <functional>
#include <string>

namespace gcprof::test {

// What `call` threw (its what()), or `none` when it returned.
inline std::string errorInChild(const std::function<void()>& call, const std::string& none = "(no error)") {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string err = none;
    try {
      call();
    } catch (const std::exception& e) {
      err = e.what();
    }
    ssize_t n = write(fds[1], err.data(), err.size());
    _exit(n == static_cast<ssize_t>(err.size()) ? 0 : 1);
  }
  close(fds[1]);
  pollfd p{fds[0], POLLIN, 0};
  std::string got;
  if (poll(&p, 1, 10000) <= 0) {
    kill(pid, SIGKILL);
    got = "blocked for 10 s";
  } else {
    char buf[1024];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return got;
}

}  // namespace gcprof::test

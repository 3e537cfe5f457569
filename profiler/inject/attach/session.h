// One `gcprof attach` session inside the job: what the CLI asked for (a small
// key=value file it wrote), the state it reads back, and the thread that
// attaches, watches and detaches.
#pragma once

#include <cstdint>
#include <string>

namespace gcprof::inject::attach {

struct Request {
  std::string db;            // the trace
  int64_t run_id = 0;        // the run the CLI made for this process
  int64_t min_bytes = 1024;
  int64_t steps = 0;         // detach after this many steps (0: not by steps)
  int64_t duration_ms = 0;   // detach after this long (0: not by time)
  int64_t cli_pid = 0;       // `gcprof attach`: when it is gone, we detach
  std::string ctl;           // the CLI writes "detach" here
  std::string state;         // we write "attached ...", "detached ...", "failed: ..."
  std::string shim;          // profiler/python, for python jobs
  std::string backend = "auto";  // auto | host | cuda (`gcprof attach --backend`)
};

// false with `error` set when a line is malformed or a key is missing.
bool parseRequest(const std::string& text, Request& out, std::string& error);

}  // namespace gcprof::inject::attach

// What `gcprof record` asked for, read once from the environment at start-up
// (plain C strings and numbers: this runs before main, inside malloc's reach).
#pragma once

#include <cstdint>

namespace gcprof::inject {

struct Config {
  bool enabled = false;        // GCPROF_DB set: this process is recorded
  char db[4096] = {0};         // GCPROF_DB: the trace file
  int64_t min_bytes = 1024;    // GCPROF_MIN_BYTES: smaller allocations are only counted
  int64_t steps_from = -1;     // GCPROF_STEPS=A:B records steps A..B-1 (-1 = all)
  int64_t steps_to = -1;       //   (B = -1: to the end)
  bool start_paused = false;   // GCPROF_PAUSED=1: wait for `gcprof ctl resume`
  bool root = false;           // the process `gcprof record` started (GCPROF_ROOT_PID)
  bool rank_of_root = false;   // a rank the root launched (RANK set, the root is its parent)
  int64_t run_id = 0;          // GCPROF_RUN_ID: the run `gcprof record` made for the root
  char backend[16] = "auto";   // GCPROF_BACKEND: auto | host | cuda
  bool attached = false;       // `gcprof attach`: the --steps window counts from the first
                               //   step seen; the heap from before is told apart (recorder.cpp)
  int flush_wait_ms = 5000;    // GCPROF_FLUSH_WAIT_MS: on SIGTERM/SIGINT, how long the job
                               //   waits for its events to reach the trace before it dies
};

// Read inline on every interposed malloc and free (min_bytes).
extern Config g_config;
inline const Config& config() { return g_config; }
void loadConfig();  // from the environment; once, at start-up
void setConfig(const Config& c);  // `gcprof attach`: before the writer starts

}  // namespace gcprof::inject

#include "config.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace gcprof::inject {
Config g_config;

void setConfig(const Config& c) { g_config = c; }

void loadConfig() {
  Config c;
  const char* db = getenv("GCPROF_DB");
  if (!db || !*db || strlen(db) >= sizeof(c.db)) {
    g_config = c;
    return;
  }
  c.enabled = true;
  strcpy(c.db, db);
  if (const char* v = getenv("GCPROF_MIN_BYTES")) c.min_bytes = strtoll(v, nullptr, 10);
  if (const char* v = getenv("GCPROF_STEPS")) {
    char* end = nullptr;
    c.steps_from = strtoll(v, &end, 10);
    if (end && *end == ':') c.steps_to = end[1] ? strtoll(end + 1, nullptr, 10) : -1;
    if (c.steps_from < 0) c.steps_from = 0;
  }
  if (const char* v = getenv("GCPROF_PAUSED")) c.start_paused = strcmp(v, "1") == 0;
  if (const char* v = getenv("GCPROF_ROOT_PID")) {
    long long root_pid = strtoll(v, nullptr, 10);
    c.root = root_pid == getpid();
    // A worker torchrun (or accelerate's launcher, which runs torchrun in
    // its own process) started: it trains, so like the root it opens its run
    // rather than drop what it freed while importing torch (docs/recording.md,
    // "Cost"). A DataLoader worker that inherits RANK is the rank's child.
    c.rank_of_root = !c.root && root_pid == getppid() && getenv("RANK") != nullptr;
  }
  if (const char* v = getenv("GCPROF_RUN_ID")) c.run_id = strtoll(v, nullptr, 10);
  if (const char* v = getenv("GCPROF_FLUSH_WAIT_MS")) {
    long long ms = strtoll(v, nullptr, 10);  // `record --flush-wait` checked the text
    if (ms >= 0 && ms <= 3600000) c.flush_wait_ms = static_cast<int>(ms);
  }
  if (const char* v = getenv("GCPROF_BACKEND")) {
    strncpy(c.backend, v, sizeof(c.backend) - 1);
  }
  g_config = c;
}

}  // namespace gcprof::inject

// Per-thread "we are inside gcprof" flag: allocations made by gcprof itself
// (SQLite, the writer, dlsym) or re-entering a hook pass through unrecorded.
#pragma once

namespace gcprof::inject {

extern __thread bool t_in_gcprof __attribute__((tls_model("initial-exec")));

class HookGuard {
 public:
  HookGuard() : was_(t_in_gcprof) { t_in_gcprof = true; }
  ~HookGuard() { t_in_gcprof = was_; }
  bool reentered() const { return was_; }

 private:
  bool was_;
};

}  // namespace gcprof::inject

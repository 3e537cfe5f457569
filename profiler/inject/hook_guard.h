// Per-thread "we are inside gcprof" flag: allocations made by gcprof itself
// (SQLite, the writer, dlsym) or re-entering a hook pass through unrecorded.
#pragma once

namespace gcprof::inject {

extern __thread bool t_in_gcprof __attribute__((tls_model("initial-exec")));
// Set while gcprof's attach thread runs python in the job: what it
// allocates is gcprof's, but a block it frees may be the job's (the last
// reference to a job's tensor dropped there), and an unreported free would
// leave that block live in the trace.
extern __thread bool t_frees_are_the_jobs __attribute__((tls_model("initial-exec")));

class HookGuard {
 public:
  HookGuard() : was_(t_in_gcprof) { t_in_gcprof = true; }
  ~HookGuard() { t_in_gcprof = was_; }
  bool reentered() const { return was_; }

 private:
  bool was_;
};

}  // namespace gcprof::inject

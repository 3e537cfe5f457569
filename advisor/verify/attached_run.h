// A baseline recorded by `gcprof attach` starts in the middle of the job:
// its steps are some of the job's, and the memory the job held before attach
// is in it only in part (live tensors are; the process's own heap, e.g.
// torch's import-time tables, is not). `verify` re-runs the job from its
// start, so the re-run is compared on the baseline's steps, and its peak
// above the level both runs held entering the last of them.
#pragma once

#include <optional>
#include <string>

#include "plan/plan_file.h"
#include "trace.h"
#include "verify/verification.h"

namespace gcprof::advisor {

struct AttachedBaseline {
  bool attached = false;
  // The baseline's steps are numbered as the job numbers them (its C API
  // steps, or its optimizers' step count for a python job); false when the
  // job kept no count and steps count from attach.
  bool numbered_by_job = true;
  int64_t first_step = 0;  // the job's number of the first step recorded
};

// Read from the scalars `attach_step` and `attach_step_unknown` that an
// attached run records at its first step.
AttachedBaseline attachedBaseline(const Trace& baseline);

// For a baseline whose steps count from attach: the offset that makes its
// losses those of the re-run's steps offset+k, the smallest that pairs every
// baseline loss within `tolerance`; nullopt when none does.
std::optional<int64_t> offsetByLosses(const Trace& baseline, const Trace& measured, double tolerance);

// Renumbers the baseline's steps, scalars and allocations by `offset`.
void shiftSteps(Trace& baseline, int64_t offset);

// The re-run's peak over the baseline's steps, taken above the live bytes it
// held entering the last of them and put on the baseline's level there:
// what the attached recording would have measured. Nullopt when the re-run
// lacks those steps.
struct ComparedPeak {
  Bytes peak = 0;            // the compared peak
  Bytes rerun_peak = 0;      // the re-run's own peak, from its start
  Bytes rerun_entering = 0;  // live in the re-run entering the last aligned step
  Bytes baseline_entering = 0;
};
std::optional<ComparedPeak> comparedPeak(const Trace& baseline, const Trace& measured);

// Pairs the baseline's steps with the re-run's (renumbering the baseline
// when its steps count from attach) and says how, for the verdict.
std::string alignAttached(Trace& baseline, const Trace& measured, const AttachedBaseline& a);

// The verification of an attached baseline made like for like: the peak
// gates judged on comparedPeak, and `v.attached` saying how the steps were
// aligned (`how`, from the caller) and what the peak is.
void judgeAttached(Verification& v, const PlanFile& plan, const Trace& baseline, const Trace& measured,
                   const std::string& how);

}  // namespace gcprof::advisor

// Reading a checkpoint plan (gcprof.plan/2 or /1, docs/plan.md) in a LibTorch program.
//
// The advisor writes the plan; a training loop asks it which of its units to
// checkpoint and how they group into segments (runs of consecutive units
// replayed as one region by gcprof::torch::checkpoint):
//
//   auto plan = gcprof::torch::plan_from_env();            // GCPROF_PLAN, if set
//   if (plan) segments = plan->resolve(model_units);       // throws PlanError
//
// Everything is checked before the first step: a file that is not a plan, a
// newer format, a unit the model does not have (with near matches), segments
// that are not consecutive or overlap.
#ifndef GCPROF_TORCH_PLAN_H
#define GCPROF_TORCH_PLAN_H

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gcprof::torch {

// Says what is wrong with a plan, where, and what to do.
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Units [first, last] of the model's unit list, checkpointed as one region.
struct SegmentRange {
  size_t first = 0;
  size_t last = 0;
  bool operator==(const SegmentRange& o) const { return first == o.first && last == o.last; }
};

class CheckpointPlan {
 public:
  // Parses and validates plan text; `source` names it in errors (a path).
  static CheckpointPlan parse(const std::string& json_text, const std::string& source);
  static CheckpointPlan load(const std::string& path);

  const std::string& source() const { return source_; }
  // The unit chain the plan was made for, in forward order (may be empty).
  const std::vector<std::string>& units() const { return units_; }
  // The checkpointed segments, each a run of consecutive unit names.
  const std::vector<std::vector<std::string>>& segments() const { return segments_; }

  bool is_checkpointed(const std::string& unit) const;

  // Maps the segments onto the model's checkpointable units (forward order).
  // Throws PlanError when a name is not one of them, listing near matches,
  // or when a segment's units are not consecutive in the model.
  std::vector<SegmentRange> resolve(const std::vector<std::string>& model_units) const;

 private:
  std::string source_;
  std::vector<std::string> units_;
  std::vector<std::vector<std::string>> segments_;
};

// The plan named by the GCPROF_PLAN environment variable; nullopt when unset
// or empty. Throws PlanError when it is set but unreadable or invalid.
std::optional<CheckpointPlan> plan_from_env();

// Up to `limit` candidates closest to `name` by edit distance, best first,
// among those close enough to be a plausible typo (or sharing its prefix).
std::vector<std::string> near_matches(const std::string& name,
                                      const std::vector<std::string>& candidates,
                                      size_t limit = 3);

}  // namespace gcprof::torch

#endif  // GCPROF_TORCH_PLAN_H

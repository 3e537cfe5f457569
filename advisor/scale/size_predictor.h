// A plan's peak and step time at a size that was never run.
//
// The scaled chain (chain_scaling.h) gives the plan's chain peak at the
// size. The chain is an envelope over the steps, a little above what the
// replay simulator finds on a recorded run; that difference, for the same
// plan on the recorded run nearest in size whose chain peak is set by the
// same moment as at the asked size, is added (nothing when no run's is). It
// is not fitted over the sizes: it comes from which moment sets the peak,
// and that moment moves as the size grows (for `every` on the python
// sample: recomputing the first unit at batch 2 to 8, inside the last unit
// at batch 32, where the chain is exact), so neither a line through it nor
// the nearest run's value carries over to another moment.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/advice.h"
#include "scale/chain_scaling.h"
#include "solve/optimal_solver.h"

namespace gcprof::advisor {

// One recorded run of the job: its trace and the advisor's view of it.
struct SizedAdvice {
  int64_t size = 0;
  const Trace* trace = nullptr;
  Advice advice;
};

struct SizePrediction {
  Segments segments;
  Bytes peak = 0;
  Bytes chain_peak = 0;  // the scaled chain's bound, before the simulator's correction
  Ns recompute_ns = 0;
  Ns step_ns = 0;
};

class SizePredictor {
 public:
  // `runs` must outlive the predictor. Throws AdviceError (chain_scaling.h).
  SizePredictor(const std::vector<SizedAdvice>& runs, std::optional<GrowthForm> form,
                SizeMeasure measure = SizeMeasure::Count);

  GrowthForm form() const { return scaling_.form(); }
  SizeMeasure measure() const { return scaling_.measure(); }
  const ChainScaling& scaling() const { return scaling_; }
  // The baseline step time over the fit variable, and how sure it is.
  const TimeFit& stepTimeFit() const { return step_fit_; }
  SegmentKind kind() const { return kind_; }
  int units() const { return runs_.front().advice.chain.size(); }
  const UnitChain& chainAt(int64_t size);

  SizePrediction predict(const Segments& plan, int64_t size);
  // The least-recompute plan predicted to fit `budget` (none, every and
  // uniform included, as `advise` does); nullopt when none does.
  std::optional<SizePrediction> optimal(int64_t size, Bytes budget);
  // The plan with the smallest chain peak, with its prediction.
  SizePrediction minimum(int64_t size);

 private:
  Bytes simulatedMinusChain(const SizedAdvice& run, const Segments& plan);
  double correction(const Segments& plan, int64_t size, const ChainPeak& at_size);

  const std::vector<SizedAdvice>& runs_;
  ChainScaling scaling_;
  SegmentKind kind_;
  SolverOptions options_;
  std::vector<SizePoint> step_times_;  // over the fit variable
  TimeFit step_fit_;
  std::map<int64_t, UnitChain> chains_;                      // by size
  std::map<std::pair<std::vector<std::pair<int, int>>, int64_t>, Bytes> corrections_;  // by plan, run size
};

}  // namespace gcprof::advisor

// The unit chain (chain/unit_chain.h) as a function of the job's size: every
// number of the chain -- each unit's saved and transient bytes, the peaks
// around it, the memory outside the units, the persistent part, the times --
// fitted over the runs recorded at different sizes (size_fit.h), so that the
// solvers can plan for a size that was never run. Numbers that are live
// bytes (peaks, the memory outside the units) are fitted above the
// persistent part and the persistent part's own model added back. Numbers
// that are maxima of several moments (UnitChain::*_moments) are the maximum
// of the moments' fits, and within a moment the maximum of its instants'
// fits (UnitChain::*_instants): the moment and the instant that are highest
// change with the size.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chain/unit_chain.h"
#include "scale/persistent_memory.h"
#include "scale/size_fit.h"

namespace gcprof::advisor {

struct SizedChain {
  double size = 0;
  int64_t run = 0;   // for messages
  UnitChain chain;
  // Byte sizes of the allocations live when the steady step begins
  // (liveAllocationsAtStep); when every run has them, the persistent part
  // is modelled by persistent_memory.h instead of a fit.
  std::vector<Bytes> persistent_allocations;
};

// How well the scaled chain reproduces a recorded run: the chain predicted
// at the run's size against the chain recorded there, number by number.
struct FitCheck {
  double size = 0;        // the recorded size missed most
  Bytes miss = 0;         // |predicted - recorded| of the number missed most
  Bytes recorded = 0;     // that number as recorded
  Bytes peak = 0;         // the run's recorded peak (miss / peak is the error)
  std::string number;     // which number ("peak in layers.0", "live before layers.3's backward")
  // The size is not one the line was drawn through (three or more sizes,
  // affine): the miss checks the model instead of restating its input.
  bool independent = false;
};

class ChainScaling {
 public:
  // Throws AdviceError when the runs cannot be runs of one job at different
  // sizes: fewer than two sizes, different units, or a peak that does not
  // grow with the size. Every fit is over fitVariable(size, measure).
  ChainScaling(std::vector<SizedChain> runs, GrowthForm form, SizeMeasure measure = SizeMeasure::Count);

  // The chain predicted at `size` (values below zero are clamped to zero:
  // a fitted constant term can be slightly negative for bytes that are all
  // per sample).
  UnitChain at(double size) const;
  GrowthForm form() const { return form_; }
  SizeMeasure measure() const { return measure_; }
  // The largest miss over the recorded runs (every number of the chain).
  FitCheck check() const;
  const std::optional<PersistentModel>& persistent() const { return persistent_; }
  // The runs, their sizes as fit variables (fitVariable).
  const std::vector<SizedChain>& runs() const { return runs_; }

 private:
  UnitChain atVariable(double x) const;

  std::vector<SizedChain> runs_;  // sizes as fit variables (fitVariable)
  GrowthForm form_;
  SizeMeasure measure_;
  std::optional<PersistentModel> persistent_;
};

// The recorded sizes where a checkpoint's arguments were not found (its held
// bytes, or the last gap after they were freed, are 0) while other sizes
// found them: the match by bytes fails when an input is below the
// recording's 1 KiB floor (Llama's position ids at 64 tokens), and a fit
// through those zeros is far off at a larger size (bench/RESULTS.md, "What
// fits by resolution and sequence length"). Sorted.
std::vector<double> sizesWithoutArguments(const std::vector<SizedChain>& runs);

// The form the recorded peaks above the persistent part support (growthFormOf),
// over fitVariable(size, measure).
GrowthForm peakGrowthForm(const std::vector<SizedChain>& runs, SizeMeasure measure = SizeMeasure::Count);

}  // namespace gcprof::advisor

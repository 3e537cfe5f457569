// The unit chain (model/unit_chain.h) as a function of the job's size: every
// number of the chain -- each unit's saved and transient bytes, the peaks
// around it, the memory outside the units, the persistent part, the times --
// fitted over the runs recorded at different sizes (size_fit.h), so that the
// solvers can plan for a size that was never run.
#pragma once

#include <string>
#include <vector>

#include "model/unit_chain.h"
#include "scale/size_fit.h"

namespace gcprof::advisor {

struct SizedChain {
  double size = 0;
  int64_t run = 0;   // for messages
  UnitChain chain;
};

class ChainScaling {
 public:
  // Throws AdviceError when the runs cannot be runs of one job at different
  // sizes: fewer than two sizes, different units, or a peak that does not
  // grow with the size.
  ChainScaling(std::vector<SizedChain> runs, GrowthForm form);

  // The chain predicted at `size` (values below zero are clamped to zero:
  // a fitted constant term can be slightly negative for bytes that are all
  // per sample).
  UnitChain at(double size) const;
  GrowthForm form() const { return form_; }
  const std::vector<SizedChain>& runs() const { return runs_; }

 private:
  std::vector<SizedChain> runs_;
  GrowthForm form_;
};

// The form the recorded peaks support (growthFormOf on them).
GrowthForm peakGrowthForm(const std::vector<SizedChain>& runs);

}  // namespace gcprof::advisor

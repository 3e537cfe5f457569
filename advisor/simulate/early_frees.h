// When each dropped allocation is freed by its checkpointed forward
// (CheckpointedForward::freeTime), remembered for all the plans of one
// advice: every plan that drops an allocation asks the same question of it
// (its unit is the one it was born in, whatever the segment), and answering
// walks the sub-modules around its birth and their outputs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "chain/checkpointed_forward.h"
#include "units/step_layout.h"
#include "units/step_regions.h"
#include "trace.h"

namespace gcprof::advisor {

class EarlyFrees {
 public:
  EarlyFrees(const std::vector<Allocation>& rows, size_t steps);

  // forward.freeTime(a, unit.fwd_start, unit.fwd_end) for `a`, a row of
  // `rows` born in a forward position of complete step `si` (regions `reg`),
  // `unit` the unit of that position. Safe from several threads (the
  // simulations of one advice run side by side).
  Ns freeTime(const CheckpointedForward& forward, size_t si, const StepRegions& reg, const Allocation& a,
              const UnitWindow& unit) const;

 private:
  // A step's rows born from its first forward to its last forward's end,
  // each answer as an offset from its unit's forward start (4 bytes a row:
  // 40 MB at 10M allocations, not 80).
  struct Step {
    std::once_flag made;
    size_t first = 0, count = 0;
    std::unique_ptr<std::atomic<uint32_t>[]> offset;
  };
  static constexpr uint32_t kUnknown = UINT32_MAX;   // not asked yet
  static constexpr uint32_t kTooFar = UINT32_MAX - 1;  // does not fit: asked each time

  const std::vector<Allocation>& rows_;
  std::unique_ptr<Step[]> steps_;  // once_flag neither moves nor copies
  size_t step_count_;
};

}  // namespace gcprof::advisor

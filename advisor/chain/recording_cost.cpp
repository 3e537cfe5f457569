#include "chain/recording_cost.h"

#include <algorithm>
#include <string>
#include <vector>

#include "units/op_table.h"
#include "units/run_scalars.h"
#include "saturating.h"

namespace gcprof::advisor {

namespace {

template <typename Counted>
void subtractPerRange(RunLayout& layout, const Trace& trace, Ns per_call, Counted counted) {
  if (per_call <= 0) return;
  std::vector<Ns> starts;
  for (const Range& r : trace.ranges)
    if (counted(r)) starts.push_back(r.start);
  std::sort(starts.begin(), starts.end());
  for (StepLayout& step : layout.steps) {
    for (UnitWindow& u : step.units) {
      if (u.device_time) continue;
      auto lo = std::lower_bound(starts.begin(), starts.end(), u.fwd_start);
      auto hi = std::upper_bound(starts.begin(), starts.end(), u.fwd_end);
      Ns calls = static_cast<Ns>(hi - lo);
      u.forward_ns = std::max(u.forward_ns / 10, u.forward_ns - calls * per_call);
    }
  }
}

}  // namespace

RecordingCost recordingCost(const Trace& trace) {
  return {medianScalar(trace, "hook_ns_per_call"),
          sat::add(medianScalar(trace, "op_hook_ns_per_call"), medianScalar(trace, "op_dispatch_ns_per_call")),
          medianScalar(trace, "selective_ns_per_op")};
}

void subtractRecordingCost(RunLayout& layout, const Trace& trace, const RecordingCost& cost) {
  subtractPerRange(layout, trace, cost.hook_ns_per_call, [](const Range& r) {
    return r.domain == RangeDomain::Module && r.phase == Phase::Forward;
  });
  subtractPerRange(layout, trace, cost.op_ns_per_call, isOpRange);
}

}  // namespace gcprof::advisor

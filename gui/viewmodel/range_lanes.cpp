#include "range_lanes.h"

#include <algorithm>
#include <map>

namespace gcprof::view {
namespace {

void finishLane(Lane& lane) {
  std::stable_sort(lane.items.begin(), lane.items.end(),
                   [](const LaneItem& a, const LaneItem& b) { return a.start < b.start; });
  lane.max_end.resize(lane.items.size());
  Ns m = INT64_MIN;
  for (size_t i = 0; i < lane.items.size(); ++i) lane.max_end[i] = m = std::max(m, lane.items[i].end);
}

}  // namespace

RangeLanes::RangeLanes(const Trace& trace) {
  Lane steps;
  steps.label = "steps";
  steps.steps = true;
  steps.depth = -1;
  for (size_t i = 0; i < trace.steps.size(); ++i) {
    const Step& s = trace.steps[i];
    steps.items.push_back({s.start, std::max(s.end, s.start), static_cast<int64_t>(i), 1});
  }
  std::map<int, Lane> by_depth;
  for (size_t i = 0; i < trace.ranges.size(); ++i) {
    const Range& r = trace.ranges[i];
    Lane& lane = by_depth[r.depth];
    lane.depth = r.depth;
    lane.items.push_back({r.start, std::max(r.end, r.start), static_cast<int64_t>(i), 1});
  }
  if (!steps.items.empty()) {
    finishLane(steps);
    lanes_.push_back(std::move(steps));
  }
  for (auto& [depth, lane] : by_depth) {
    lane.label = depth == 0 ? "ranges" : "depth " + std::to_string(depth);
    finishLane(lane);
    lanes_.push_back(std::move(lane));
  }
}

void RangeLanes::visible(size_t lane_index, const TimeWindow& w, double pixels, double min_px,
                         std::vector<LaneItem>& out) const {
  out.clear();
  if (lane_index >= lanes_.size() || pixels <= 0) return;
  const Lane& lane = lanes_[lane_index];
  const double min_ns = min_px * w.width() / pixels;
  // First item that may reach into the window: max_end is non-decreasing.
  size_t i = static_cast<size_t>(
      std::lower_bound(lane.max_end.begin(), lane.max_end.end(), w.t0,
                       [](Ns e, double t) { return static_cast<double>(e) < t; }) -
      lane.max_end.begin());
  LaneItem fold;
  bool folding = false;
  auto flush = [&] {
    if (!folding) return;
    out.push_back(fold);
    folding = false;
  };
  for (; i < lane.items.size() && static_cast<double>(lane.items[i].start) < w.t1; ++i) {
    const LaneItem& it = lane.items[i];
    if (static_cast<double>(it.end) < w.t0) continue;  // ended before the window
    if (static_cast<double>(it.end - it.start) >= min_ns) {
      flush();
      out.push_back(it);
      continue;
    }
    // Narrow: join the current fold when it starts within min_px of its end.
    if (folding && static_cast<double>(it.start) <= static_cast<double>(fold.end) + min_ns) {
      fold.end = std::max(fold.end, it.end);
      fold.folded += 1;
      fold.range = -1;
    } else {
      flush();
      fold = it;
      folding = true;
    }
  }
  flush();
}

}  // namespace gcprof::view

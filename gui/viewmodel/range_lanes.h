// The range lanes under the memory area: steps, then module (and other)
// ranges by depth. A query returns what to draw for a time window, with
// ranges narrower than a few pixels folded into one grey item, so a frame
// costs what is visible and never draws thousands of slivers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "time_window.h"
#include "trace.h"

namespace gcprof::view {

struct LaneItem {
  Ns start = 0;
  Ns end = 0;
  int64_t range = -1;  // index into Trace::ranges (or Trace::steps in the step lane); -1 = folded
  int folded = 1;      // how many ranges this item stands for
};

struct Lane {
  std::string label;
  bool steps = false;  // items index Trace::steps
  int depth = 0;
  std::vector<LaneItem> items;   // by start
  std::vector<Ns> max_end;       // running max of end over items, for the first visible
};

class RangeLanes {
 public:
  RangeLanes() = default;
  explicit RangeLanes(const Trace& trace);

  const std::vector<Lane>& lanes() const { return lanes_; }
  // Items of lane `lane` overlapping `w`, folded where narrower than `min_px`
  // on an axis `pixels` wide. Appends to `out` (cleared first).
  void visible(size_t lane, const TimeWindow& w, double pixels, double min_px,
               std::vector<LaneItem>& out) const;

 private:
  std::vector<Lane> lanes_;
};

}  // namespace gcprof::view

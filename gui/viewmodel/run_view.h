// One recorded run made ready to draw: the trace, its series, the LOD memory
// curve, the range lanes and the units table. Built once when a run is picked.
#pragma once

#include <string>
#include <vector>

#include "range_lanes.h"
#include "series_assignment.h"
#include "stacked_memory.h"
#include "time_warp.h"
#include "trace.h"
#include "unit_table.h"

namespace gcprof::view {

struct RunView {
  // `unit_names` in forward order (from a plan of this run); empty = detect.
  RunView(Trace t, std::vector<std::string> unit_names);

  Trace trace;
  SeriesAssignment series;
  StackedMemory memory;
  RangeLanes lanes;
  std::vector<UnitStats> units;

  // The span worth showing: first to last event, steps and ranges included.
  Ns begin = 0;
  Ns end = 0;
  // Where the first view starts: shortly before the first step. A python job
  // spends seconds importing before it, which would take most of the width.
  Ns focus_begin = 0;
  std::string label() const;  // "run 1 · python · 3 steps · 2.1 GiB peak"
};

// A single-line curve drawn over the stacked area (a plan's prediction, a
// verification run's measurement), placed on the baseline's time axis.
struct Overlay {
  std::string label;
  StackedMemory curve;  // one series
  TimeWarp warp;        // the curve's times -> the baseline's axis (identity by default)
  Rgba colour;
  Bytes peak = 0;
};

// The whole-run curve of every counted allocation, one series.
StackedMemory totalCurve(const Trace& trace);

}  // namespace gcprof::view

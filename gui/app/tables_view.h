// The tables under the timeline: units (forward time, saved bytes, what
// the selected plan does with them), what fits (largest size per strategy and
// peak by size, for files with sized runs or a sized plan) and the
// allocations live at the cursor, clipped so that a million live allocations
// scroll as fast as ten.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "timeline_view.h"
#include "trace_document.h"

namespace gcprof::gui {

class TablesView {
 public:
  void reset() {
    live_for_ = -2;
    live_.clear();
    range_by_id_ready_ = false;
  }
  // Clicking a unit row highlights it in `timeline`.
  void drawUnits(const view::TraceDocument& doc, TimelineView& timeline, ImVec2 size);
  void drawLive(const view::TraceDocument& doc, TimelineView& timeline, ImVec2 size);
  // The what-if of the selected sized plan, or one computed here for the
  // file's sized runs at a budget picked in percent of the largest run.
  void drawWhatFits(view::TraceDocument& doc, ImVec2 size);
  void setWhatFitsPercent(int percent) { what_fits_percent_ = percent; }

 private:
  Ns live_for_ = -2;          // cursor the live list was computed for
  std::vector<size_t> live_;  // indices into trace.allocations, largest first
  Bytes live_bytes_ = 0;
  // Range names for the live rows; rebuilt after reset() (a new run).
  std::unordered_map<int64_t, const Range*> range_by_id_;
  bool range_by_id_ready_ = false;
  int what_fits_percent_ = 100;
  std::string what_fits_error_;
};

}  // namespace gcprof::gui

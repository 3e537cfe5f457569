// The memory timeline: the stacked live-bytes area (persistent, per-unit
// activations, the rest) with step boundaries, the budget line and plan
// overlays, a time axis, and the range lanes underneath. Owns the view state
// (visible window, cursor, highlighted unit) and handles zoom/pan/click.
#pragma once

#include <imgui.h>

#include <vector>

#include "range_lanes.h"
#include "stacked_memory.h"
#include "time_window.h"
#include "trace_document.h"

namespace gcprof::gui {

// Pixel layout shared by the drawing and the hit-testing code.
namespace timeline_layout {
constexpr float kGutter = 92;    // y-axis labels and lane names
constexpr float kAxisH = 20;
constexpr float kLaneH = 20;
constexpr float kMinFoldPx = 3;  // narrower ranges fold (Tracy's rule of thumb)
}  // namespace timeline_layout

class TimelineView {
 public:
  // Forget the window and selection: a new run was loaded.
  void reset(const view::RunView& run);
  void fitAll(const view::RunView& run);
  void fitStep(const view::RunView& run, size_t step_index);

  // Draws into the current ImGui window, `size` pixels from the cursor position.
  void draw(const view::TraceDocument& doc, ImVec2 size);

  int selectedUnit() const { return selected_unit_; }
  void selectUnit(int unit) { selected_unit_ = unit; }
  Ns cursor() const { return cursor_; }
  void setCursor(Ns t) { cursor_ = t; }
  const view::TimeWindow& window() const { return window_; }
  void setWindow(const view::TimeWindow& w) { window_ = w; }
  // Screen rectangle of the memory area in the last frame (for screenshot tests).
  ImVec4 memoryRect() const { return memory_rect_; }
  // Bytes at the top edge of the memory area in the last frame.
  double bytesAtTop() const { return memory_y_max_; }

 private:
  void handleInput(const view::RunView& run, ImVec2 origin, ImVec2 size, float plot_w);
  void drawMemory(const view::TraceDocument& doc, ImDrawList* dl, ImVec2 p0, ImVec2 p1);
  void drawOverlay(const view::Overlay& o, ImDrawList* dl, ImVec2 p0, ImVec2 p1, double y_max);
  void drawAxis(const view::RunView& run, ImDrawList* dl, ImVec2 p0, float width);
  void drawLanes(const view::RunView& run, ImDrawList* dl, ImVec2 p0, float width, float label_w);
  void memoryTooltip(const view::TraceDocument& doc, Ns t);
  void rangeTooltip(const view::RunView& run, const view::Lane& lane, const view::LaneItem& item);
  double yMax(const view::TraceDocument& doc) const;

  view::TimeWindow window_;
  double memory_y_max_ = 1;  // bytes at the top of the memory area, last frame
  Ns hover_time_ = -1;       // set by the input pass when the mouse is over the area
  int selected_unit_ = -1;
  Ns cursor_ = -1;
  ImVec4 memory_rect_{0, 0, 0, 0};
  // Reused between frames so a frame allocates nothing in steady state.
  view::CurveColumns columns_;
  std::vector<view::LaneItem> items_;
  std::vector<ImVec2> points_;
  std::vector<uint16_t> order_;  // stacking order of the last frame
  std::vector<float> base_;
  std::vector<Bytes> series_at_;
};

// 1, 2 or 5 times a power of ten, at least `raw`: axis tick spacing.
double niceStep(double raw);
// Series from the bottom of the stack up: persistent, units, other.
void stackOrder(size_t series_count, std::vector<uint16_t>& order);

}  // namespace gcprof::gui

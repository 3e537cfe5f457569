// Interaction on the timeline: wheel zoom around the mouse, drag to pan,
// click to place the cursor and highlight a unit, double-click to fit a step,
// and the hover tooltips.
#include <algorithm>
#include <cmath>

#include "theme.h"
#include "byte_text.h"
#include "timeline_view.h"

namespace gcprof::gui {
using namespace timeline_layout;
void TimelineView::handleInput(const view::RunView& run, ImVec2 origin, ImVec2 mem, float plot_w) {
  ImGuiIO& io = ImGui::GetIO();
  const bool hovered = ImGui::IsItemHovered();
  const float x0 = origin.x + kGutter;
  const double t_mouse = window_.toTime(io.MousePos.x - x0, plot_w);
  if (hovered && io.MouseWheel != 0) window_.zoom(std::pow(0.8, io.MouseWheel), t_mouse);
  if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f))
    window_.pan(-static_cast<double>(io.MouseDelta.x) * window_.width() / plot_w);
  window_.clampTo(static_cast<double>(run.begin), static_cast<double>(run.end));
  if (!hovered || io.MousePos.x < x0) return;

  const bool clicked = ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
                       ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).x == 0 &&
                       ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 0).y == 0;
  const bool double_clicked = ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);
  const Ns t = static_cast<Ns>(t_mouse);

  if (io.MousePos.y < origin.y + mem.y) {
    // Which series is under the mouse: walk the column's stack bottom-up.
    int column = static_cast<int>(io.MousePos.x - x0);
    int unit = -1;
    if (column >= 0 && column < columns_.count) {
      float y = origin.y + mem.y;
      const float scale = mem.y / static_cast<float>(std::max(1.0, memory_y_max_));
      for (uint16_t s : order_) {
        float top = y - static_cast<float>(columns_.stackAt(column, s)) * scale;
        if (io.MousePos.y >= top && io.MousePos.y < y && s >= view::kFirstUnitSeries)
          unit = s - view::kFirstUnitSeries;
        y = top;
      }
    }
    if (clicked) {
      cursor_ = t;
      selected_unit_ = unit;
    }
    if (double_clicked)
      for (size_t i = 0; i < run.trace.steps.size(); ++i)
        if (run.trace.steps[i].start <= t && t <= run.trace.steps[i].end) fitStep(run, i);
    hover_time_ = t;
    return;
  }
  // Lanes.
  float lanes_y = origin.y + mem.y + kAxisH + 4;
  int li = static_cast<int>(std::floor((io.MousePos.y - lanes_y) / kLaneH));
  const auto& lanes = run.lanes.lanes();
  if (li < 0 || li >= static_cast<int>(lanes.size())) return;
  run.lanes.visible(static_cast<size_t>(li), window_, plot_w, kMinFoldPx, items_);
  const double slack = 1.5 * window_.width() / plot_w;  // a pixel and a half
  for (const view::LaneItem& it : items_) {
    if (t_mouse < static_cast<double>(it.start) - slack || t_mouse > static_cast<double>(it.end) + slack) continue;
    rangeTooltip(run, lanes[li], it);
    if (double_clicked && lanes[li].steps && it.range >= 0) fitStep(run, static_cast<size_t>(it.range));
    else if (double_clicked) window_ = view::TimeWindow::fit(static_cast<double>(it.start), static_cast<double>(it.end));
    if (clicked && !lanes[li].steps && it.range >= 0) {
      int unit = run.series.unitOfRange(static_cast<size_t>(it.range));
      selected_unit_ = unit == selected_unit_ ? -1 : unit;
    }
    break;
  }
}

void TimelineView::memoryTooltip(const view::TraceDocument& doc, Ns t) {
  const view::RunView& run = doc.run();
  run.memory.seriesAt(t, series_at_);
  Bytes total = 0;
  std::vector<std::pair<Bytes, uint16_t>> top;
  for (size_t s = 0; s < series_at_.size(); ++s) {
    total += series_at_[s];
    if (series_at_[s] > 0) top.emplace_back(series_at_[s], static_cast<uint16_t>(s));
  }
  std::sort(top.rbegin(), top.rend());
  const double zero = run.trace.steps.empty() ? static_cast<double>(run.begin)
                                              : static_cast<double>(run.trace.steps.front().start);
  ImGui::BeginTooltip();
  ImGui::Text("%s   live %s", view::formatDuration(static_cast<double>(t) - zero).c_str(),
              gcprof::formatBytes(total).c_str());
  for (size_t i = 0; i < std::min<size_t>(top.size(), 6); ++i) {
    ImGui::ColorButton("##c", ImGui::ColorConvertU32ToFloat4(col(run.series.seriesColour(top[i].second))),
                       ImGuiColorEditFlags_NoTooltip, ImVec2(10, 10));
    ImGui::SameLine();
    ImGui::Text("%-10s %s", gcprof::formatBytes(top[i].first).c_str(), run.series.seriesName(top[i].second).c_str());
  }
  for (const view::Overlay* o : {doc.predicted(), doc.verified()})
    if (o) ImGui::Text("%s: %s", o->label.c_str(), gcprof::formatBytes(o->curve.totalAt(static_cast<Ns>(o->warp.fromBaseline(static_cast<double>(t))))).c_str());
  ImGui::TextDisabled("click: cursor + highlight unit · wheel: zoom · drag: pan · double-click: fit step");
  ImGui::EndTooltip();
}

}  // namespace gcprof::gui

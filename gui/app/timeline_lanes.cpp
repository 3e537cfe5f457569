// Range lanes of the timeline view: steps and module ranges by depth, folded
// where narrow, with tooltips.
#include <algorithm>

#include "theme.h"
#include "byte_text.h"
#include "timeline_view.h"

namespace gcprof::gui {
using namespace timeline_layout;
namespace {

view::Rgba itemColour(const view::RunView& run, const view::Lane& lane, const view::LaneItem& it,
                      int selected_unit) {
  if (it.range < 0) return view::palette::kFolded;
  if (lane.steps) return view::palette::kStepLane;
  const Range& r = run.trace.ranges[static_cast<size_t>(it.range)];
  int unit = run.series.unitOfRange(static_cast<size_t>(it.range));
  view::Rgba c = unit >= 0 ? run.series.units()[unit].colour : view::Rgba{96, 118, 150, 255};
  if (r.phase == Phase::Backward) c = view::backwardShade(c);
  if (selected_unit >= 0 && unit == selected_unit) c = view::highlight(c);
  return c;
}

}  // namespace

void TimelineView::drawLanes(const view::RunView& run, ImDrawList* dl, ImVec2 p0, float width,
                             float label_w) {
  const auto& lanes = run.lanes.lanes();
  for (size_t li = 0; li < lanes.size(); ++li) {
    const view::Lane& lane = lanes[li];
    float y = p0.y + static_cast<float>(li) * kLaneH;
    dl->AddText(ImVec2(p0.x + 4, y + 2), IM_COL32(150, 150, 150, 255), lane.label.c_str());
    float x0 = p0.x + label_w;
    run.lanes.visible(li, window_, width, kMinFoldPx, items_);
    for (const view::LaneItem& it : items_) {
      float a = x0 + static_cast<float>(std::max(0.0, window_.toX(static_cast<double>(it.start), width)));
      float b = x0 + static_cast<float>(std::min<double>(width, window_.toX(static_cast<double>(it.end), width)));
      b = std::max(b, a + 1);
      view::Rgba c = itemColour(run, lane, it, selected_unit_);
      dl->AddRectFilled(ImVec2(a, y + 1), ImVec2(b, y + kLaneH - 1), col(c));
      if (b - a < 24) continue;
      std::string text;
      if (it.range < 0) text = std::to_string(it.folded);
      else if (lane.steps) text = "step " + std::to_string(run.trace.steps[static_cast<size_t>(it.range)].index);
      else text = run.trace.ranges[static_cast<size_t>(it.range)].name;
      ImVec2 ts = ImGui::CalcTextSize(text.c_str());
      if (ts.x > b - a - 6) continue;
      dl->AddText(ImVec2(a + 3, y + (kLaneH - ts.y) / 2), IM_COL32(255, 255, 255, 230), text.c_str());
    }
  }
}

void TimelineView::rangeTooltip(const view::RunView& run, const view::Lane& lane,
                                const view::LaneItem& it) {
  ImGui::BeginTooltip();
  if (it.range < 0) {
    ImGui::Text("%d ranges folded (zoom in to see them)", it.folded);
    ImGui::Text("%s", view::formatDuration(static_cast<double>(it.end - it.start)).c_str());
  } else if (lane.steps) {
    const Step& s = run.trace.steps[static_cast<size_t>(it.range)];
    ImGui::Text("step %lld", static_cast<long long>(s.index));
    ImGui::Text("duration %s", view::formatDuration(static_cast<double>(s.end - s.start)).c_str());
    ImGui::Text("peak %s", gcprof::formatBytes(run.memory.maxIn(s.start, s.end + 1)).c_str());
    for (const Scalar& sc : run.trace.scalars)
      if (sc.step == s.index) ImGui::Text("%s %.5g", sc.name.c_str(), sc.value);
    ImGui::TextDisabled("double-click: fit to this step");
  } else {
    const Range& r = run.trace.ranges[static_cast<size_t>(it.range)];
    const char* phase = r.phase == Phase::Forward ? "forward" : r.phase == Phase::Backward ? "backward" : "";
    ImGui::Text("%s %s", r.name.empty() ? "(unnamed)" : r.name.c_str(), phase);
    ImGui::Text("duration %s", view::formatDuration(static_cast<double>(r.end - r.start)).c_str());
    if (r.device_ns >= 0) ImGui::Text("device time %s", view::formatDuration(static_cast<double>(r.device_ns)).c_str());
    // Bytes allocated while it was open (any thread): allocations are by time.
    const auto& allocs = run.trace.allocations;
    auto lo = std::lower_bound(allocs.begin(), allocs.end(), r.start,
                               [](const Allocation& a, Ns t) { return a.alloc < t; });
    Bytes bytes = 0;
    size_t count = 0;
    for (auto a = lo; a != allocs.end() && a->alloc <= r.end; ++a) {
      if (run.series.seriesOf(static_cast<size_t>(a - allocs.begin())) == view::kSeriesIgnored) continue;
      bytes += a->bytes;
      ++count;
    }
    ImGui::Text("allocated inside %s in %zu allocations", gcprof::formatBytes(bytes).c_str(), count);
    if (r.input_bytes || r.output_bytes)
      ImGui::Text("in %s, out %s", gcprof::formatBytes(r.input_bytes).c_str(), gcprof::formatBytes(r.output_bytes).c_str());
    ImGui::TextDisabled("click: highlight its unit's allocations");
  }
  ImGui::EndTooltip();
}

}  // namespace gcprof::gui

#include "tables_view.h"

#include <initializer_list>
#include <utility>

#include "byte_text.h"

#include "live_set.h"
#include "theme.h"

namespace gcprof::gui {
namespace {

void swatch(view::Rgba c) {
  ImGui::ColorButton("##swatch", ImGui::ColorConvertU32ToFloat4(col(c)), ImGuiColorEditFlags_NoTooltip,
                     ImVec2(10, 10));
  ImGui::SameLine();
}

// A scrolling table filling `size` below one line of text, its header row
// kept in view; false when ImGui skips it (then there is nothing to end).
bool beginScrollingTable(const char* id, std::initializer_list<std::pair<const char*, float>> columns,
                         ImVec2 size) {
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable(id, static_cast<int>(columns.size()), flags,
                         ImVec2(size.x, size.y - ImGui::GetFrameHeightWithSpacing())))
    return false;
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const auto& [name, weight] : columns) ImGui::TableSetupColumn(name, ImGuiTableColumnFlags_WidthStretch, weight);
  ImGui::TableHeadersRow();
  return true;
}

}  // namespace

void TablesView::drawUnits(const view::TraceDocument& doc, TimelineView& timeline, ImVec2 size) {
  const auto& units = doc.run().units;
  ImGui::Text("Units (%zu)", units.size());
  if (!beginScrollingTable(
          "units", {{"unit", 2.0f}, {"forward", 1.0f}, {"saved", 1.0f}, {"checkpoint", 1.0f}, {"pred. saving", 1.0f}},
          size))
    return;
  for (size_t i = 0; i < units.size(); ++i) {
    const view::UnitStats& u = units[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    swatch(u.colour);
    bool selected = timeline.selectedUnit() == static_cast<int>(i);
    if (ImGui::Selectable(u.name.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns))
      timeline.selectUnit(selected ? -1 : static_cast<int>(i));
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(view::formatDuration(u.forward_ns).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(gcprof::formatBytes(static_cast<Bytes>(u.saved_bytes)).c_str());
    ImGui::TableNextColumn();
    // Over the module tree a unit may be checkpointed as part of its block.
    std::string mark = !u.checkpointed ? "-" : u.checkpointed_as == u.name || u.checkpointed_as.empty()
                                                   ? "yes"
                                                   : "block " + u.checkpointed_as;
    if (u.saved_ops > 0)
      ImGui::Text("selective, keeps %zu ops", u.saved_ops);  // the list: the plan file, advise
    else
      ImGui::TextUnformatted(doc.selectedPlan() ? mark.c_str() : "");
    ImGui::TableNextColumn();
    if (u.checkpointed) ImGui::TextUnformatted(gcprof::formatBytes(static_cast<Bytes>(u.predicted_saving)).c_str());
  }
  ImGui::EndTable();
}

void TablesView::drawLive(const view::TraceDocument& doc, TimelineView& timeline, ImVec2 size) {
  const view::RunView& run = doc.run();
  if (timeline.cursor() != live_for_) {
    live_for_ = timeline.cursor();
    live_ = live_for_ >= 0 ? view::liveAllocations(run.trace, run.series, live_for_) : std::vector<size_t>{};
    live_bytes_ = 0;
    for (size_t i : live_) live_bytes_ += run.trace.allocations[i].bytes;
  }
  if (live_for_ < 0) {
    ImGui::TextDisabled("Live at cursor: click the memory area to place the cursor");
    return;
  }
  ImGui::Text("Live at cursor: %zu allocations, %s", live_.size(), gcprof::formatBytes(live_bytes_).c_str());
  if (!beginScrollingTable("live", {{"bytes", 1.0f}, {"series", 2.0f}, {"range", 2.0f}, {"age", 1.0f}}, size))
    return;
  if (!range_by_id_ready_) {
    range_by_id_.clear();
    for (const Range& r : run.trace.ranges) range_by_id_.emplace(r.id, &r);
    range_by_id_ready_ = true;
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(live_.size()));
  while (clipper.Step()) {
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      size_t i = live_[static_cast<size_t>(row)];
      const Allocation& a = run.trace.allocations[i];
      uint16_t s = run.series.seriesOf(i);
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(gcprof::formatBytes(a.bytes).c_str());
      ImGui::TableNextColumn();
      ImGui::PushID(row);
      swatch(run.series.seriesColour(s));
      ImGui::PopID();
      ImGui::TextUnformatted(run.series.seriesName(s).c_str());
      ImGui::TableNextColumn();
      auto r = range_by_id_.find(a.range);
      ImGui::TextUnformatted(r == range_by_id_.end() ? "-" : r->second->name.c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(view::formatDuration(static_cast<double>(live_for_ - a.alloc)).c_str());
    }
  }
  ImGui::EndTable();
}

void TablesView::drawWhatFits(view::TraceDocument& doc, ImVec2 size) {
  if (!doc.sizedRuns().empty()) {
    ImGui::SetNextItemWidth(160);
    ImGui::SliderInt("budget, % of the largest run", &what_fits_percent_, 10, 400, "%d%%");
    ImGui::SameLine();
    if (ImGui::Button("What fits?") && doc.computeWhatFits(what_fits_percent_, &what_fits_error_))
      what_fits_error_.clear();
  }
  if (!what_fits_error_.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", what_fits_error_.c_str());
  const view::WhatFits* w = doc.whatFits();
  if (!w) {
    ImGui::TextDisabled(doc.sizedRuns().empty()
                            ? "Record the job at two sizes (gcprof record --name batch=2 ...) to see what fits"
                            : "Pick a budget and press \"What fits?\"");
    return;
  }
  std::string budget = gcprof::formatBytes(w->budget - w->headroom);
  ImGui::Text("Largest %s below %s (budget %s less headroom; %s fit; %s):", w->size_name.c_str(), budget.c_str(),
              w->budget_text.c_str(), w->fit.c_str(), w->source.c_str());
  for (const view::WhatFits::Largest& l : w->largest) {
    ImGui::BulletText("%-8s %lld%s  %s", l.strategy.c_str(), static_cast<long long>(l.size), l.capped ? "+" : "",
                      l.peak >= 0 ? gcprof::formatBytes(l.peak).c_str() : "nothing fits");
  }
  for (const std::string& n : w->notes) ImGui::TextWrapped("%s", n.c_str());
  const int columns = 1 + static_cast<int>(w->strategies.size());
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY;
  float rest = ImGui::GetContentRegionAvail().y;
  if (!ImGui::BeginTable("what fits", columns, flags, ImVec2(size.x, rest))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(w->size_name.c_str());
  for (const std::string& s : w->strategies) ImGui::TableSetupColumn(s.c_str());
  ImGui::TableHeadersRow();
  const ImVec4 over(1, 0.4f, 0.3f, 1);
  for (const view::WhatFits::Row& r : w->rows) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%lld%s", static_cast<long long>(r.size), r.recorded ? " (recorded)" : "");
    for (size_t i = 0; i < r.peaks.size(); ++i) {
      ImGui::TableNextColumn();
      std::string cell = gcprof::formatBytes(r.peaks[i]);
      if (r.fits[i]) ImGui::TextUnformatted(cell.c_str());
      else ImGui::TextColored(over, "%s *", cell.c_str());
    }
  }
  ImGui::EndTable();
}

}  // namespace gcprof::gui

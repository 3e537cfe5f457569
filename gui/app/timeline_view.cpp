#include "timeline_view.h"
#include "byte_text.h"

#include <algorithm>
#include <cmath>

#include "theme.h"

namespace gcprof::gui {
using namespace timeline_layout;
// Bottom-to-top order: persistent, units in forward order, the rest on top.
void stackOrder(size_t series_count, std::vector<uint16_t>& order) {
  order.clear();
  order.push_back(view::kSeriesPersistent);
  for (size_t s = view::kFirstUnitSeries; s < series_count; ++s) order.push_back(static_cast<uint16_t>(s));
  order.push_back(view::kSeriesOther);
}

double niceStep(double raw) {
  double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

void TimelineView::reset(const view::RunView& run) {
  selected_unit_ = -1;
  cursor_ = -1;
  window_ = view::TimeWindow::fit(static_cast<double>(run.focus_begin), static_cast<double>(run.end));
}

void TimelineView::fitAll(const view::RunView& run) {
  window_ = view::TimeWindow::fit(static_cast<double>(run.begin), static_cast<double>(run.end));
}

void TimelineView::fitStep(const view::RunView& run, size_t i) {
  if (i >= run.trace.steps.size()) return;
  const Step& s = run.trace.steps[i];
  window_ = view::TimeWindow::fit(static_cast<double>(s.start), static_cast<double>(std::max(s.end, s.start)));
}

double TimelineView::yMax(const view::TraceDocument& doc) const {
  // The whole run's scale, not the window's: zooming must not rescale bytes.
  double m = static_cast<double>(doc.run().memory.peak());
  if (const view::PlanView* p = doc.selectedPlan()) m = std::max(m, static_cast<double>(p->budget));
  if (doc.predicted()) m = std::max(m, static_cast<double>(doc.predicted()->peak));
  if (doc.verified()) m = std::max(m, static_cast<double>(doc.verified()->peak));
  return std::max(m * 1.08, 1024.0);
}

void TimelineView::draw(const view::TraceDocument& doc, ImVec2 size) {
  const view::RunView& run = doc.run();
  ImVec2 origin = ImGui::GetCursorScreenPos();
  size.x = std::max(size.x, kGutter + 50);
  const float plot_w = size.x - kGutter - 8;
  const float lanes_h = static_cast<float>(run.lanes.lanes().size()) * kLaneH;
  const float mem_h = std::max(80.0f, size.y - kAxisH - lanes_h - 6);
  ImGui::InvisibleButton("timeline", ImVec2(size.x, mem_h + kAxisH + lanes_h + 6));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImVec2 p0(origin.x + kGutter, origin.y), p1(p0.x + plot_w, origin.y + mem_h);
  memory_rect_ = ImVec4(p0.x, p0.y, plot_w, mem_h);

  dl->PushClipRect(origin, ImVec2(origin.x + size.x, origin.y + size.y), true);
  drawMemory(doc, dl, p0, p1);
  drawAxis(run, dl, ImVec2(p0.x, p1.y), plot_w);
  drawLanes(run, dl, ImVec2(origin.x, p1.y + kAxisH + 4), plot_w, kGutter);
  dl->PopClipRect();
  hover_time_ = -1;
  handleInput(run, origin, ImVec2(size.x, mem_h), plot_w);
  if (hover_time_ >= 0) memoryTooltip(doc, hover_time_);
}

void TimelineView::drawMemory(const view::TraceDocument& doc, ImDrawList* dl, ImVec2 p0, ImVec2 p1) {
  const view::RunView& run = doc.run();
  const float w = p1.x - p0.x, h = p1.y - p0.y;
  dl->AddRectFilled(p0, p1, IM_COL32(22, 24, 29, 255));
  const double y_max = yMax(doc);
  memory_y_max_ = y_max;
  auto y_of = [&](double bytes) { return p1.y - static_cast<float>(bytes / y_max) * h; };

  // Horizontal grid with byte labels in the gutter.
  // Round steps in the unit the labels use (1 GiB, 512 MiB...), not in bytes.
  double unit = 1;
  while (unit * 1024 <= y_max / 2) unit *= 1024;
  double step = niceStep(y_max / unit / 5) * unit;
  for (int i = 1; i <= 16 && i * step < y_max; ++i) {
    const double b = i * step;
    float y = y_of(b);
    dl->AddLine(ImVec2(p0.x, y), ImVec2(p1.x, y), IM_COL32(255, 255, 255, 18));
    std::string label = gcprof::formatBytes(static_cast<Bytes>(b));
    ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    dl->AddText(ImVec2(p0.x - ts.x - 6, y - ts.y / 2), IM_COL32(170, 170, 170, 255), label.c_str());
  }

  // The stacked area, one summary per pixel column; runs of columns with the
  // same pixel extent become one rectangle.
  const int n = std::max(1, static_cast<int>(w));
  run.memory.columns(window_.t0, window_.t1, n, columns_);
  stackOrder(columns_.series, order_);
  base_.assign(n, p1.y);
  const float px = w / n;
  for (uint16_t s : order_) {
    view::Rgba c = run.series.seriesColour(s);
    bool dim = selected_unit_ >= 0 && s != view::kFirstUnitSeries + selected_unit_;
    if (selected_unit_ >= 0 && !dim) c = view::highlight(c);
    ImU32 fill = dim ? col(c, 90) : col(c);
    int run_start = -1;
    float run_top = 0, run_bottom = 0;
    auto flush = [&](int end) {
      if (run_start >= 0 && run_bottom - run_top >= 0.5f)
        dl->AddRectFilled(ImVec2(p0.x + run_start * px, run_top), ImVec2(p0.x + end * px, run_bottom), fill);
      run_start = -1;
    };
    for (int i = 0; i < n; ++i) {
      float bottom = base_[i];
      float top = bottom - static_cast<float>(static_cast<double>(columns_.stackAt(i, s)) / y_max) * h;
      base_[i] = top;
      float rt = std::round(top), rb = std::round(bottom);
      if (run_start >= 0 && rt == run_top && rb == run_bottom) continue;
      flush(i);
      run_start = i;
      run_top = rt;
      run_bottom = rb;
    }
    flush(n);
  }

  // Step boundaries.
  for (const Step& s : run.trace.steps) {
    for (Ns t : {s.start, s.end}) {
      if (t < window_.t0 || t > window_.t1) continue;
      float x = p0.x + static_cast<float>(window_.toX(static_cast<double>(t), w));
      dl->AddLine(ImVec2(x, p0.y), ImVec2(x, p1.y), col(view::palette::kStepBoundary));
    }
  }
  if (doc.verified()) drawOverlay(*doc.verified(), dl, p0, p1, y_max);
  if (doc.predicted()) drawOverlay(*doc.predicted(), dl, p0, p1, y_max);
  if (const view::PlanView* plan = doc.selectedPlan(); plan && plan->budget > 0) {
    float y = y_of(static_cast<double>(plan->budget));
    dl->AddLine(ImVec2(p0.x, y), ImVec2(p1.x, y), col(view::palette::kBudget), 2.0f);
    std::string label = "budget " + gcprof::formatBytes(plan->budget);
    dl->AddText(ImVec2(p1.x - ImGui::CalcTextSize(label.c_str()).x - 6, y - 18),
                col(view::palette::kBudget), label.c_str());
  }
  if (cursor_ >= 0 && cursor_ >= window_.t0 && cursor_ <= window_.t1) {
    float x = p0.x + static_cast<float>(window_.toX(static_cast<double>(cursor_), w));
    dl->AddLine(ImVec2(x, p0.y), ImVec2(x, p1.y), IM_COL32(255, 255, 255, 200), 1.5f);
  }
}

void TimelineView::drawOverlay(const view::Overlay& o, ImDrawList* dl, ImVec2 p0, ImVec2 p1,
                               double y_max) {
  const float w = p1.x - p0.x, h = p1.y - p0.y;
  const int n = std::max(1, static_cast<int>(w));
  // Each column's interval on the overlay's own clock (see TimeWarp), then
  // the highest total there: the same max-per-column rule as the area.
  points_.clear();
  const double first = o.warp.toBaseline(static_cast<double>(o.curve.firstTime()));
  const double last = o.warp.toBaseline(static_cast<double>(o.curve.lastTime()));
  const double dt = window_.width() / n;
  auto flush = [&] {
    if (points_.size() > 1) dl->AddPolyline(points_.data(), static_cast<int>(points_.size()), col(o.colour), 0, 2.0f);
    points_.clear();
  };
  for (int i = 0; i < n; ++i) {
    double a = window_.t0 + i * dt, b = a + dt;
    if (b < first || a > last) {
      flush();
      continue;
    }
    Ns oa = static_cast<Ns>(std::ceil(o.warp.fromBaseline(a)));
    Ns ob = std::max(oa, static_cast<Ns>(std::ceil(o.warp.fromBaseline(b))));
    float y = p1.y - static_cast<float>(static_cast<double>(o.curve.maxIn(oa, ob)) / y_max) * h;
    points_.push_back(ImVec2(p0.x + (i + 0.5f) * w / n, y));
  }
  flush();
}

void TimelineView::drawAxis(const view::RunView& run, ImDrawList* dl, ImVec2 p0, float width) {
  // Times read from the start of the first step (or of the run): "where in the step".
  const double zero = run.trace.steps.empty() ? static_cast<double>(run.begin)
                                              : static_cast<double>(run.trace.steps.front().start);
  double step = niceStep(window_.width() / std::max(2.0, width / 110.0));
  double first = std::ceil((window_.t0 - zero) / step) * step + zero;
  // Ticks are counted, at most one per 40 pixels, not added up to t1: far
  // from zero (a damaged trace's 2^60 ns) t + step rounds back to t and a
  // sum never gets there.
  const int max_ticks = static_cast<int>(width / 40) + 2;
  for (int i = 0; i < max_ticks; ++i) {
    const double t = first + i * step;
    if (!(t <= window_.t1)) break;
    float x = p0.x + static_cast<float>(window_.toX(t, width));
    dl->AddLine(ImVec2(x, p0.y), ImVec2(x, p0.y + 5), IM_COL32(200, 200, 200, 255));
    std::string label = std::fabs(t - zero) < step * 1e-6 ? "0" : view::formatDuration(t - zero);
    dl->AddText(ImVec2(x + 3, p0.y + 2), IM_COL32(170, 170, 170, 255), label.c_str());
  }
}

}  // namespace gcprof::gui

#include "run_view.h"
#include "byte_text.h"

#include <algorithm>

namespace gcprof::view {

RunView::RunView(Trace t, std::vector<std::string> unit_names)
    : trace(std::move(t)),
      series(trace, std::move(unit_names)),
      memory(trace.allocations, series.series(), series.seriesCount()),
      lanes(trace),
      units(unitStats(trace, series)) {
  bool any = false;
  auto widen = [&](Ns a, Ns b) {
    if (!any) { begin = a; end = b; any = true; return; }
    begin = std::min(begin, a);
    end = std::max(end, b);
  };
  if (!memory.empty()) widen(memory.firstTime(), memory.lastTime());
  for (const Step& s : trace.steps) widen(s.start, std::max(s.end, s.start));
  for (const Range& r : trace.ranges) widen(r.start, std::max(r.end, r.start));
  if (!any) { begin = trace.run.started; end = std::max(trace.run.ended, begin + 1000); }
  focus_begin = begin;
  if (!trace.steps.empty()) {
    Ns first = trace.steps.front().start;
    for (const Step& s : trace.steps) first = std::min(first, s.start);
    // A margin of 5% of the training span keeps what leads into step 0 in view.
    focus_begin = std::max(begin, first - (end - first) / 20);
  }
}

std::string RunView::label() const {
  std::string s = "run " + std::to_string(trace.run.id);
  if (!trace.run.name.empty()) s += " \"" + trace.run.name + "\"";
  if (!trace.run.runtime.empty()) s += " · " + trace.run.runtime;
  s += " · " + std::to_string(trace.steps.size()) + " steps";
  s += " · " + formatBytes(memory.peak()) + " peak (" + series.space().describe() + ")";
  return s;
}

StackedMemory totalCurve(const Trace& trace) {
  SeriesAssignment series(trace);
  std::vector<uint16_t> one(series.series());
  for (auto& s : one) s = s == kSeriesIgnored ? kSeriesIgnored : 0;
  return StackedMemory(trace.allocations, one, 1);
}

}  // namespace gcprof::view

#include "chain/region_maxima.h"

#include <algorithm>
#include <climits>
#include <optional>

#include "saturating.h"

namespace gcprof::advisor {
namespace {

void raise(Bytes& slot, Bytes v) { slot = std::max(slot, v); }

// The local maxima of one region's live-bytes curve, in time order: the
// entry level and the level after each instant's events, a value kept when
// the next is lower or the region ends. Whichever is highest at one size
// may not be at another (UnitChain::*_instants).
class RegionInstants {
 public:
  void add(Bytes v) {
    if (started_ && v < last_ && rising_) maxima_.push_back(last_);
    if (!started_ || v > last_) rising_ = true;
    if (v < last_) rising_ = false;
    started_ = true;
    last_ = v;
  }
  std::vector<Bytes> finish() {
    if (started_ && rising_) maxima_.push_back(last_);
    started_ = false;
    return std::move(maxima_);
  }

 private:
  std::vector<Bytes> maxima_;
  Bytes last_ = 0;
  bool started_ = false, rising_ = false;
};

}  // namespace

RegionMaxima regionMaxima(const Trace& trace, const RecordedEvents& events,
                          const std::vector<const StepLayout*>& steps,
                          const std::vector<StepRegions>& regions,
                          std::vector<std::vector<Bytes>>& entering, bool keep_instants) {
  RegionMaxima m;
  m.per_step.resize(steps.size());
  m.instants.resize(steps.size());
  entering.resize(steps.size());
  for (size_t s = 0; s < steps.size(); ++s) {
    m.per_step[s].assign(regions[s].count(), LLONG_MIN);
    m.instants[s].assign(regions[s].count(), {});
    entering[s].assign(regions[s].count(), 0);
  }
  std::vector<RegionInstants> open;  // the current step's regions
  Bytes live = 0;
  size_t s = 0;       // current complete step
  int cur = -1;       // last region of step s entered so far
  auto noteOutside = [&](Ns t) {
    if (live <= m.outside && m.outside > 0) return;
    m.outside = live;
    m.outside_where = "outside the recorded steps (set-up, parameters)";
    for (size_t q = 0; q < steps.size(); ++q) {
      if (t < steps[q]->start || t > steps[q]->end) continue;
      m.outside_where = t < regions[q].begin()
                            ? "before the first unit's forward (inputs, embeddings)"
                            : "after the first unit's backward (optimizer step, gradients)";
      return;
    }
    for (const Step& st : trace.steps)
      if (t >= st.start && t <= st.end) m.outside_where = "in a step whose units were not all recorded";
  };
  // Enter every region of step s up to `r` at the current level.
  auto enterUpTo = [&](int r) {
    if (cur < 0) open.assign(regions[s].count(), {});
    for (int q = cur + 1; q <= r; ++q) {
      if (q > 0) m.instants[s][q - 1] = open[q - 1].finish();
      entering[s][q] = live;
      raise(m.per_step[s][q], live);
      if (keep_instants) open[q].add(live);
    }
    cur = std::max(cur, r);
  };
  // The events come in time order: each step's regions from a cursor.
  std::optional<RegionCursor> region_at;
  if (!steps.empty()) region_at.emplace(regions[0]);
  auto leaveStep = [&] {
    enterUpTo(regions[s].count() - 1);
    m.instants[s][cur] = open[cur].finish();
    ++s;
    cur = -1;
    if (s < steps.size()) region_at.emplace(regions[s]);
  };
  // Each event read once (its row is the cost) and asked for ahead.
  MemoryEvent next = events.size() > 0 ? events[0] : MemoryEvent{};
  for (size_t i = 0; i < events.size(); ++i) {
    const MemoryEvent e = next;
    events.prefetch(i + RecordedEvents::kPrefetch);
    if (i + 1 < events.size()) next = events[i + 1];
    Ns t = e.time;
    while (s < steps.size() && t > regions[s].end()) leaveStep();
    int r = s < steps.size() ? region_at->at(t) : StepRegions::kOutside;
    if (r != StepRegions::kOutside) enterUpTo(r);
    sat::addTo(live, e.delta);
    bool last_at_time = i + 1 == events.size() || next.time != t;
    if (!last_at_time) continue;
    if (r == StepRegions::kOutside)
      noteOutside(t);
    else {
      raise(m.per_step[s][r], live);
      if (keep_instants) open[r].add(live);
    }
  }
  while (s < steps.size()) leaveStep();
  return m;
}

}  // namespace gcprof::advisor

// Live bytes over time, split into series, with level-of-detail queries that
// cost the same whatever the zoom: a frame asks for one summary per pixel
// column and gets, for each, the highest live total inside the column and the
// series breakdown at that moment (so the stacked area's top is exact, and
// the stack sums to it). Built once per run; queries are const and cheap.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "trace.h"

namespace gcprof::view {

// One summary per pixel column of a time window.
struct CurveColumns {
  double t0 = 0;     // window start (ns)
  double dt = 0;     // column width (ns)
  int count = 0;
  size_t series = 0;
  std::vector<Bytes> max_total;  // [count]: highest live total in the column
  std::vector<Bytes> stack;      // [count * series]: breakdown at that highest moment
  Bytes stackAt(int column, size_t s) const { return stack[column * series + s]; }
};

class StackedMemory {
 public:
  StackedMemory() = default;
  // Allocation i belongs to series `series[i]` (< series_count; anything else
  // is left out). Frees sort before allocations at the same nanosecond.
  StackedMemory(const std::vector<Allocation>& allocations, const std::vector<uint16_t>& series,
              size_t series_count);
  // A single-series curve from (time, live bytes) points, e.g. a simulated one.
  static StackedMemory fromPoints(const std::vector<std::pair<Ns, Bytes>>& points);

  bool empty() const { return time_.empty(); }
  size_t seriesCount() const { return series_count_; }
  size_t eventCount() const { return time_.size(); }
  Ns firstTime() const { return time_.empty() ? 0 : time_.front(); }
  Ns lastTime() const { return time_.empty() ? 0 : time_.back(); }
  Bytes peak() const;
  Ns peakTime() const;

  // Live bytes after every event at or before t.
  Bytes totalAt(Ns t) const;
  void seriesAt(Ns t, std::vector<Bytes>& out) const;  // out[series]
  // Highest live total over [a, b), counting what was live on entering.
  Bytes maxIn(Ns a, Ns b) const;

  // `count` columns splitting [t0, t1). Without series only max_total is filled.
  void columns(double t0, double t1, int count, CurveColumns& out, bool with_series = true) const;

 private:
  void build();  // totals, the max pyramid, series snapshots
  // Index of the highest total among events [a, b); b > a.
  size_t maxIndex(size_t a, size_t b) const;
  // Number of events at or before t (index of the first event after t).
  size_t eventsUpTo(Ns t) const;
  void stateAfter(size_t n_events, Bytes* out) const;  // series after the first n events

  size_t series_count_ = 0;
  std::vector<Ns> time_;
  std::vector<Bytes> delta_;
  std::vector<uint16_t> series_;
  std::vector<Bytes> total_;                 // live total after event i
  std::vector<std::vector<uint32_t>> max_;   // level L: argmax per block of 64^(L+1) events
  std::vector<Bytes> snapshot_;              // series state before event k*kSnapshotEvery
};

}  // namespace gcprof::view

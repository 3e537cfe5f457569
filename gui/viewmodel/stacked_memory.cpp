#include "stacked_memory.h"

#include "memory/free_queue.h"
#include "saturating.h"

#include <algorithm>
#include <numeric>

namespace gcprof::view {
namespace {

// A block of the max pyramid; 64 keeps each level 1/64 of the one below, so
// a query touches at most 2*64 entries per level.
constexpr size_t kFan = 64;
// Series state is stored every this many events; a breakdown replays at most
// this many deltas. 1024 keeps snapshots small (a few MB at 10M events).
constexpr size_t kSnapshotEvery = 1024;

}  // namespace

StackedMemory::StackedMemory(const std::vector<Allocation>& allocs, const std::vector<uint16_t>& series,
                         size_t series_count)
    : series_count_(series_count) {
  // Allocations arrive sorted by allocation time; each one's free waits in
  // a queue until the allocations reach its time (frees first on ties: an
  // address handed back and reused at the same tick is not a peak). Frees
  // sorted on their own took a fifth of a 10M-row view's memory.
  // Freed at the instant it was made: never held memory (same rule as the
  // advisor's event order, so peaks agree).
  auto drawn = [&](size_t i) {
    return series[i] < series_count && !(allocs[i].freed() && allocs[i].free <= allocs[i].alloc);
  };
  // One pass counts the events and sees whether the rows drawn are in time
  // order (a Trace's are): then they are walked as they are, else by index.
  size_t n = 0;
  bool in_order = true;
  Ns last = INT64_MIN;
  for (size_t i = 0; i < allocs.size(); ++i) {
    if (!drawn(i)) continue;
    in_order = in_order && allocs[i].alloc >= last;
    last = allocs[i].alloc;
    n += allocs[i].freed() ? 2 : 1;
  }
  std::vector<uint32_t> alloc_order;
  if (!in_order) {
    for (size_t i = 0; i < allocs.size(); ++i)
      if (drawn(i)) alloc_order.push_back(static_cast<uint32_t>(i));
    std::stable_sort(alloc_order.begin(), alloc_order.end(),
                     [&](uint32_t a, uint32_t b) { return allocs[a].alloc < allocs[b].alloc; });
  }
  time_.reserve(n);
  delta_.reserve(n);
  series_.reserve(n);
  auto add = [&](Ns t, Bytes delta, uint32_t k) {
    time_.push_back(t);
    delta_.push_back(delta);
    series_.push_back(series[k]);
  };
  advisor::FreeQueue<uint32_t> frees;  // the row of each
  std::vector<uint32_t> instant;
  auto freeUpTo = [&](Ns t) {
    while (!frees.empty() && frees.topTime() <= t) {
      const Ns at = frees.topTime();
      instant.clear();
      while (!frees.empty() && frees.topTime() == at) instant.push_back(frees.pop());
      std::sort(instant.begin(), instant.end());  // an instant's frees by row
      for (uint32_t k : instant) add(at, sat::neg(allocs[k].bytes), k);
    }
  };
  auto allocate = [&](uint32_t k) {
    freeUpTo(allocs[k].alloc);
    add(allocs[k].alloc, allocs[k].bytes, k);
    if (allocs[k].freed()) frees.push(allocs[k].free, k);
  };
  if (in_order) {
    for (size_t i = 0; i < allocs.size(); ++i)
      if (drawn(i)) allocate(static_cast<uint32_t>(i));
  } else {
    for (uint32_t k : alloc_order) allocate(k);
  }
  freeUpTo(INT64_MAX);
  build();
}

StackedMemory StackedMemory::fromPoints(const std::vector<std::pair<Ns, Bytes>>& points) {
  StackedMemory c;
  c.series_count_ = 1;
  Bytes live = 0;
  for (const auto& [t, bytes] : points) {
    c.time_.push_back(t);
    c.delta_.push_back(sat::sub(bytes, live));
    c.series_.push_back(0);
    live = bytes;
  }
  c.build();
  return c;
}

void StackedMemory::build() {
  size_t n = time_.size();
  // Appended, not zeroed first and written again (160 MB at 10M rows).
  total_.clear();
  total_.reserve(n);
  // Exact in 128 bits: a clamped running sum would drift below zero once
  // the clamped bytes are freed again (damaged traces near INT64_MAX).
  __int128 live = 0;
  for (size_t i = 0; i < n; ++i) total_.push_back(sat::fromWide(live += delta_[i]));

  max_.clear();
  size_t below = n;
  const std::vector<uint32_t>* prev = nullptr;
  while (below > kFan) {
    std::vector<uint32_t> level((below + kFan - 1) / kFan);
    for (size_t b = 0; b < level.size(); ++b) {
      size_t lo = b * kFan, hi = std::min(below, lo + kFan);
      uint32_t best = prev ? (*prev)[lo] : static_cast<uint32_t>(lo);
      for (size_t e = lo + 1; e < hi; ++e) {
        uint32_t cand = prev ? (*prev)[e] : static_cast<uint32_t>(e);
        if (total_[cand] > total_[best]) best = cand;
      }
      level[b] = best;
    }
    max_.push_back(std::move(level));
    prev = &max_.back();
    below = prev->size();
  }

  size_t snaps = n / kSnapshotEvery + 1;
  snapshot_.assign(snaps * series_count_, 0);
  std::vector<Bytes> state(series_count_, 0);
  for (size_t k = 0; k < snaps; ++k) {
    std::copy(state.begin(), state.end(), snapshot_.begin() + k * series_count_);
    size_t hi = std::min(n, (k + 1) * kSnapshotEvery);
    for (size_t e = k * kSnapshotEvery; e < hi; ++e) sat::addTo(state[series_[e]], delta_[e]);
  }
}

size_t StackedMemory::maxIndex(size_t a, size_t b) const {
  size_t best = a;
  auto consider = [&](size_t idx) {
    if (total_[idx] > total_[best]) best = idx;
  };
  auto at = [&](size_t level, size_t i) -> size_t { return level == 0 ? i : max_[level - 1][i]; };
  size_t level = 0, lo = a, hi = b;
  while (lo < hi) {
    if (level < max_.size() && hi - lo >= 2 * kFan) {
      while (lo % kFan != 0) consider(at(level, lo++));
      while (hi % kFan != 0) consider(at(level, --hi));
      lo /= kFan;
      hi /= kFan;
      ++level;
    } else {
      for (size_t i = lo; i < hi; ++i) consider(at(level, i));
      break;
    }
  }
  return best;
}

size_t StackedMemory::eventsUpTo(Ns t) const {
  return static_cast<size_t>(std::upper_bound(time_.begin(), time_.end(), t) - time_.begin());
}

void StackedMemory::stateAfter(size_t n_events, Bytes* out) const {
  size_t k = n_events / kSnapshotEvery;
  std::copy_n(snapshot_.begin() + k * series_count_, series_count_, out);
  for (size_t e = k * kSnapshotEvery; e < n_events; ++e) sat::addTo(out[series_[e]], delta_[e]);
}

Bytes StackedMemory::peak() const {
  return total_.empty() ? 0 : std::max<Bytes>(0, total_[maxIndex(0, total_.size())]);
}

Ns StackedMemory::peakTime() const { return total_.empty() ? 0 : time_[maxIndex(0, total_.size())]; }

Bytes StackedMemory::totalAt(Ns t) const {
  size_t n = eventsUpTo(t);
  return n == 0 ? 0 : total_[n - 1];
}

void StackedMemory::seriesAt(Ns t, std::vector<Bytes>& out) const {
  out.assign(series_count_, 0);
  if (!time_.empty()) stateAfter(eventsUpTo(t), out.data());
}

Bytes StackedMemory::maxIn(Ns a, Ns b) const {
  size_t lo = static_cast<size_t>(std::lower_bound(time_.begin(), time_.end(), a) - time_.begin());
  size_t hi = static_cast<size_t>(std::lower_bound(time_.begin(), time_.end(), b) - time_.begin());
  Bytes entering = lo == 0 ? 0 : total_[lo - 1];
  return hi > lo ? std::max(entering, total_[maxIndex(lo, hi)]) : entering;
}

void StackedMemory::columns(double t0, double t1, int count, CurveColumns& out,
                          bool with_series) const {
  out.t0 = t0;
  out.count = std::max(count, 0);
  out.dt = out.count > 0 ? (t1 - t0) / out.count : 0;
  out.series = with_series ? series_count_ : 0;
  out.max_total.assign(out.count, 0);
  out.stack.assign(static_cast<size_t>(out.count) * out.series, 0);
  if (time_.empty() || out.count == 0) return;

  // Event index of each column's moment of highest total, as "events applied"
  // (0 = before the first event); consecutive columns reuse the last state.
  auto first_at_or_after = [&](double t, size_t from) {
    return static_cast<size_t>(
        std::lower_bound(time_.begin() + from, time_.end(), t,
                         [](Ns e, double v) { return static_cast<double>(e) < v; }) -
        time_.begin());
  };
  size_t lo = first_at_or_after(t0, 0);
  size_t state_n = static_cast<size_t>(-1);
  std::vector<Bytes> state(series_count_, 0);
  for (int c = 0; c < out.count; ++c) {
    size_t hi = first_at_or_after(t0 + (c + 1) * out.dt, lo);
    size_t applied = lo;  // entering state: events before the column
    Bytes best = lo == 0 ? 0 : total_[lo - 1];
    if (hi > lo) {
      size_t m = maxIndex(lo, hi);
      if (total_[m] > best) {
        best = total_[m];
        applied = m + 1;
      }
    }
    out.max_total[c] = best;
    if (with_series) {
      if (applied != state_n) {
        if (state_n != static_cast<size_t>(-1) && applied > state_n &&
            applied - state_n < kSnapshotEvery) {
          for (size_t e = state_n; e < applied; ++e) sat::addTo(state[series_[e]], delta_[e]);
        } else {
          stateAfter(applied, state.data());
        }
        state_n = applied;
      }
      std::copy(state.begin(), state.end(), out.stack.begin() + static_cast<size_t>(c) * out.series);
    }
    lo = hi;
  }
}

}  // namespace gcprof::view

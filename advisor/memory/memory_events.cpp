#include "memory/memory_events.h"

#include <algorithm>
#include <climits>
#include <string>

#include "advice_error.h"
#include "memory/free_queue.h"
#include "memory/live_sweep.h"
#include "saturating.h"

namespace gcprof::advisor {

namespace {

bool earlier(const MemoryEvent& x, const MemoryEvent& y) {
  if (x.time != y.time) return x.time < y.time;
  return x.delta < y.delta;  // frees (negative) first
}

}  // namespace

std::vector<MemoryEvent> memoryEvents(const std::vector<Allocation>& allocations,
                                      const AllocationFilter& filter) {
  std::vector<MemoryEvent> events;
  events.reserve(allocations.size() * 2);
  for (const Allocation& a : allocations) {
    if (!filter.counts(a)) continue;
    events.push_back({a.alloc, a.bytes});
    if (a.freed()) events.push_back({a.free, -a.bytes});
  }
  std::sort(events.begin(), events.end(), earlier);
  return events;
}

RecordedEvents::RecordedEvents(const std::vector<Allocation>& allocations, const AllocationFilter& filter)
    : rows_(&allocations) {
  if (allocations.size() > INT32_MAX)
    throw AdviceError("the run has " + std::to_string(allocations.size()) +
                      " allocations, more than advise can refer to (2^31 - 1); advise a shorter part of it");
  size_t n = 0;  // reserved exactly: doubling would hold up to twice the events at once
  for (const Allocation& a : allocations)
    if (filter.counts(a)) n += a.freed() ? 2 : 1;
  refs_.reserve(n);
  auto row = [](size_t i) { return static_cast<uint32_t>(i); };
  if (!inTimeOrder(allocations)) {
    for (size_t i = 0; i < allocations.size(); ++i) {
      if (!filter.counts(allocations[i])) continue;
      refs_.push_back(row(i) << 1);
      if (allocations[i].freed()) refs_.push_back(row(i) << 1 | 1);
    }
    std::sort(refs_.begin(), refs_.end(), [this](uint32_t x, uint32_t y) { return earlier(of(x), of(y)); });
    summarise();
    return;
  }
  // Rows in time order (a Trace's): swept with the live ones' frees queued;
  // the frees of an instant go before its allocations, the larger first,
  // as earlier() orders them.
  auto larger = [&](uint32_t x, uint32_t y) { return allocations[x >> 1].bytes > allocations[y >> 1].bytes; };
  FreeQueue<uint32_t> frees;  // the row of each
  auto freeUpTo = [&](Ns t) {
    while (!frees.empty() && frees.topTime() <= t) {
      const Ns at = frees.topTime();
      const size_t instant = refs_.size();
      while (!frees.empty() && frees.topTime() == at) refs_.push_back(frees.pop() << 1 | 1);
      if (refs_.size() - instant > 1)
        std::sort(refs_.begin() + static_cast<std::ptrdiff_t>(instant), refs_.end(), larger);
    }
  };
  for (size_t i = 0; i < allocations.size();) {
    const Ns t = allocations[i].alloc;
    freeUpTo(t);
    const size_t instant = refs_.size();
    for (; i < allocations.size() && allocations[i].alloc == t; ++i) {
      const Allocation& a = allocations[i];
      if (!filter.counts(a)) continue;
      refs_.push_back(row(i) << 1);
      if (a.freed()) frees.push(a.free, row(i));
    }
    // An instant's allocations, the smaller first (earlier()).
    std::sort(refs_.begin() + static_cast<std::ptrdiff_t>(instant), refs_.end(),
              [&](uint32_t x, uint32_t y) { return allocations[x >> 1].bytes < allocations[y >> 1].bytes; });
  }
  freeUpTo(INT64_MAX);
  summarise();
}

void RecordedEvents::summarise() {
  blocks_.assign((size() + kBlock - 1) / kBlock, Block{});
  for (size_t b = 0; b < blocks_.size(); ++b) {
    Block& blk = blocks_[b];
    blk.small = true;
    MemoryEvent next = (*this)[b * kBlock];
    blk.head = next;
    for (size_t i = b * kBlock; i < std::min(size(), (b + 1) * kBlock); ++i) {
      const MemoryEvent e = next;
      prefetch(i + kPrefetch);
      if (i + 1 < size()) next = (*this)[i + 1];
      // Both under kSafeSum in size before the sum: it cannot overflow.
      if (e.delta <= -kSafeSum || e.delta >= kSafeSum) blk.small = false;
      if (blk.small) blk.sum += e.delta;
      if (blk.sum <= -kSafeSum || blk.sum >= kSafeSum) blk.small = false;
      if (!blk.small) break;
      bool instant_ends = i + 1 == size() || next.time != e.time;
      if (instant_ends && (!blk.has_top || blk.sum > blk.top)) {
        blk.top = blk.sum;
        blk.top_at = static_cast<uint32_t>(i);
        blk.has_top = true;
      }
    }
  }
}

size_t RecordedEvents::firstAt(Ns t) const {
  size_t lo = 0, hi = size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (time(mid) < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

size_t RecordedEvents::firstAfter(Ns t) const {
  return t == INT64_MAX ? size() : firstAt(t + 1);
}

std::vector<MemoryEvent> RecordedEvents::copy() const {
  std::vector<MemoryEvent> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) out.push_back((*this)[i]);
  return out;
}

Bytes LevelBefore::at(size_t i) {
  if (i < next_) {  // asked backwards: start again, so that the sum is the same
    next_ = 0;
    live_ = 0;
  }
  constexpr size_t kBlock = RecordedEvents::kBlock;
  while (next_ < i && next_ < events_.size()) {
    // A whole block by its sum, where adding it event by event could not
    // saturate (the same level, without reading a row per event).
    if (next_ % kBlock == 0 && next_ + kBlock <= i) {
      const RecordedEvents::Block& block = events_.block(next_ / kBlock);
      if (block.passableAt(live_)) {
        live_ += block.sum;
        next_ = std::min(next_ + kBlock, events_.size());
        continue;
      }
    }
    events_.prefetch(next_ + RecordedEvents::kPrefetch);
    sat::addTo(live_, events_[next_].delta);
    ++next_;
  }
  return live_;
}

Bytes RecordedEvents::peak() const {
  Bytes live = 0, peak = 0;
  for (const Block& block : blocks_) {
    if (!block.passableAt(live)) return sortedEventsPeak(*this);
    if (block.has_top) peak = std::max(peak, live + block.top);
    live += block.sum;
  }
  return peak;
}

Bytes eventsPeak(std::vector<MemoryEvent>& events) {
  std::sort(events.begin(), events.end(), earlier);
  return sortedEventsPeak(events);
}

Bytes allocationsPeak(const std::vector<Allocation>& allocations, const AllocationFilter& filter) {
  Bytes peak = 0;
  if (!sweepInstants(allocations, filter, [&](Ns, Bytes live) { peak = std::max(peak, live); }))
    return sortedEventsPeak(memoryEvents(allocations, filter));
  return peak;
}

}  // namespace gcprof::advisor

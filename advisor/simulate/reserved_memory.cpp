#include "simulate/reserved_memory.h"

namespace gcprof::advisor {

CachingAllocatorModel& ReservedMemory::device(int d) {
  auto it = devices_.find(d);
  if (it == devices_.end()) it = devices_.emplace(d, CachingAllocatorModel(settings_)).first;
  return it->second;
}

void ReservedMemory::allocate(const Allocation& a, Bytes bytes) {
  CachingAllocatorModel& m = device(a.device);
  Bytes before = m.reserved(), used = m.allocated();
  live_[&a].push_back(m.malloc(bytes, trace_.contextOf(a).stream));
  reserved_ += m.reserved() - before;
  allocated_ += m.allocated() - used;
}

void ReservedMemory::release(const Allocation& a) {
  auto it = live_.find(&a);
  if (it == live_.end() || it->second.empty()) return;
  CachingAllocatorModel& m = device(a.device);
  Bytes used = m.allocated();
  m.free(it->second.back());
  it->second.pop_back();
  allocated_ += m.allocated() - used;
}

int64_t ReservedMemory::segments() const {
  int64_t n = 0;
  for (const auto& [d, m] : devices_) n += m.segmentsCreated();
  return n;
}

}  // namespace gcprof::advisor

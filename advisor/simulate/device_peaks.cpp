#include "simulate/device_peaks.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "memory/memory_curve.h"
#include "memory/memory_events.h"
#include "simulate/reserved_memory.h"

namespace gcprof::advisor {
namespace {

struct TensorEvent {
  Ns time;
  Bytes delta;
  const Allocation* a;
};

}  // namespace

Bytes replayedReservedPeak(const Trace& trace, std::string* why_not) {
  AllocatorSettings settings;
  try {
    settings = AllocatorSettings::fromRunEnvironment(trace.run.env);
  } catch (const std::invalid_argument& e) {
    if (why_not) *why_not = e.what();
    return -1;
  }
  if (!settings.native) {
    if (why_not) *why_not = "backend:cudaMallocAsync: its driver pool is not modelled";
    return -1;
  }
  AllocationFilter tensors{true, AllocKind::Tensor, -1};
  std::vector<TensorEvent> ev;
  for (const Allocation& a : trace.allocations) {
    if (!tensors.counts(a)) continue;
    ev.push_back({a.alloc, a.bytes, &a});
    if (a.freed()) ev.push_back({a.free, -a.bytes, &a});
  }
  // Frees before allocations at one instant, as every memory curve of the advisor.
  std::sort(ev.begin(), ev.end(), [](const TensorEvent& x, const TensorEvent& y) {
    if (x.time != y.time) return x.time < y.time;
    if (x.delta != y.delta) return x.delta < y.delta;
    return x.a->id < y.a->id;
  });
  ReservedMemory reserved(settings, trace);
  for (const TensorEvent& e : ev) {
    if (e.delta > 0) reserved.allocate(*e.a, e.delta);
    else reserved.release(*e.a);
  }
  return reserved.reserved();  // never falls: the end is the peak
}

// The peak of the device memory PyTorch's observed allocator did not report.
Bytes otherDevicePeak(const Trace& trace) {
  std::vector<std::pair<Ns, Bytes>> ev;
  for (const Allocation& a : trace.allocations) {
    if (a.device < 0 || a.api == static_cast<int>(AllocApi::C10CachingAllocator)) continue;
    ev.push_back({a.alloc, a.bytes});
    if (a.freed()) ev.push_back({a.free, -a.bytes});
  }
  if (ev.empty()) return -1;
  std::sort(ev.begin(), ev.end());  // frees (negative) first at one instant
  Bytes live = 0, peak = 0;
  for (const auto& e : ev) peak = std::max(peak, live += e.second);
  return peak;
}

DevicePeaks devicePeaks(const Trace& trace) {
  DevicePeaks p;
  const int c10 = static_cast<int>(AllocApi::C10CachingAllocator);
  bool tensors = false, segments = false;
  for (const Allocation& a : trace.allocations) {
    if (a.device < 0) continue;
    p.observed_allocator = p.observed_allocator || a.api == c10;
    tensors = tensors || a.kind == static_cast<int>(AllocKind::Tensor);
    segments = segments || a.kind == static_cast<int>(AllocKind::Segment);
  }
  p.device = tensors || segments;
  if (!p.device) return p;
  const int api = p.observed_allocator ? c10 : -1;
  if (p.observed_allocator) p.other = otherDevicePeak(trace);
  // Swept from the rows (memory/live_sweep.h): the same peak as the curve's,
  // without two sorted events per allocation and a point per instant.
  if (tensors) p.allocated = allocationsPeak(trace.allocations, AllocationFilter{true, AllocKind::Tensor, api});
  if (segments) {
    p.reserved = allocationsPeak(trace.allocations, AllocationFilter{true, AllocKind::Segment, api});
    p.reserved_source = "segments";
  } else {
    p.reserved = replayedReservedPeak(trace, &p.why_not);
    if (p.reserved >= 0) p.reserved_source = "model";
  }
  return p;
}

}  // namespace gcprof::advisor

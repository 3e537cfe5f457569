#include "simulate/device_peaks.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "model/memory_curve.h"
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
  AllocationFilter tensors{true, AllocKind::Tensor};
  std::vector<TensorEvent> ev;
  for (const Allocation& a : trace.allocations) {
    if (!tensors.matches(a) || a.bytes <= 0 || (a.freed() && a.free <= a.alloc)) continue;
    ev.push_back({a.alloc, a.bytes, &a});
    if (a.freed()) ev.push_back({a.free, -a.bytes, &a});
  }
  // Frees before allocations at one instant, as every memory curve of the advisor.
  std::sort(ev.begin(), ev.end(), [](const TensorEvent& x, const TensorEvent& y) {
    if (x.time != y.time) return x.time < y.time;
    if (x.delta != y.delta) return x.delta < y.delta;
    return x.a->id < y.a->id;
  });
  ReservedMemory reserved(settings);
  for (const TensorEvent& e : ev) {
    if (e.delta > 0) reserved.allocate(*e.a, e.delta);
    else reserved.release(*e.a);
  }
  return reserved.reserved();  // never falls: the end is the peak
}

DevicePeaks devicePeaks(const Trace& trace) {
  DevicePeaks p;
  bool tensors = false, segments = false;
  for (const Allocation& a : trace.allocations) {
    if (a.device < 0) continue;
    tensors = tensors || a.kind == static_cast<int>(AllocKind::Tensor);
    segments = segments || a.kind == static_cast<int>(AllocKind::Segment);
  }
  p.device = tensors || segments;
  if (!p.device) return p;
  if (tensors) p.allocated = memoryCurve(trace, AllocationFilter{true, AllocKind::Tensor}).peak;
  if (segments) {
    p.reserved = memoryCurve(trace, AllocationFilter{true, AllocKind::Segment}).peak;
    p.reserved_source = "segments";
  } else {
    p.reserved = replayedReservedPeak(trace, &p.why_not);
    if (p.reserved >= 0) p.reserved_source = "model";
  }
  return p;
}

}  // namespace gcprof::advisor

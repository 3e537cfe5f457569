#include "plan/headroom.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "byte_text.h"

namespace gcprof::advisor {

Bytes stepPeakJitter(const Trace& trace, const AllocationFilter& filter, int64_t first_step) {
  MemoryCurve curve = memoryCurve(trace, filter);
  Bytes lo = -1, hi = 0;
  for (const StepPeak& s : stepPeaks(trace, curve)) {
    if (s.step < first_step || s.end <= s.start) continue;
    lo = lo < 0 ? s.peak : std::min(lo, s.peak);
    hi = std::max(hi, s.peak);
  }
  return lo < 0 ? 0 : hi - lo;
}

Headroom resolveHeadroom(const HeadroomRequest& request, Bytes budget, Bytes jitter, bool device) {
  Headroom h;
  h.jitter = jitter;
  if (request.given) {
    // An explicit margin is taken as written: the user may know better
    // (a fixed allocator, a pinned workload) and 0 must mean none.
    h.fraction = request.percent ? request.fraction : 0;
    h.bytes = request.percent ? static_cast<Bytes>(std::llround(request.fraction * static_cast<double>(budget)))
                              : request.bytes;
    h.rule = request.text + (request.percent ? " of the budget" : "") + " (--headroom)";
    return h;
  }
  h.fraction = device ? kDeviceHeadroom : kHostHeadroom;
  h.bytes = static_cast<Bytes>(std::llround(h.fraction * static_cast<double>(budget))) + jitter;
  h.rule = std::to_string(static_cast<int>(std::lround(h.fraction * 100))) + "% of the budget" +
           (device ? " (CUDA allocator rounding)" : "") + " + " + formatBytes(jitter) +
           " step-to-step jitter";
  return h;
}

Bytes printedCeiling(Bytes b) {
  if (b < 1024) return b;  // bytes print whole
  Bytes c = b;
  for (int tries = 0; tries < 8; ++tries) {
    std::string text = formatBytes(c);
    double shown = std::strtod(text.c_str(), nullptr);
    double unit = 1;
    for (const char* u : {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}) {
      unit *= 1024;
      if (text.find(u) != std::string::npos) break;
    }
    Bytes back = std::llround(shown * unit);
    if (back >= b) return back;
    // One printed digit up: formatBytes keeps three significant digits.
    size_t dot = text.find('.'), space = text.find(' ');
    int decimals = dot == std::string::npos ? 0 : static_cast<int>(space - dot - 1);
    c = std::llround((shown + std::pow(10.0, -decimals)) * unit);
  }
  return b;  // not reached: one step up always prints at or above b
}

Bytes leastBudgetFor(Bytes peak, const HeadroomRequest& request, Bytes jitter, bool device) {
  auto holds = [&](Bytes budget) {
    return budget - resolveHeadroom(request, budget, jitter, device).bytes >= peak;
  };
  double share = request.given ? (request.percent ? request.fraction : 0)
                               : (device ? kDeviceHeadroom : kHostHeadroom);
  if (share >= 1) return -1;
  Bytes fixed = request.given ? (request.percent ? 0 : request.bytes) : jitter;
  // budget - round(share * budget) - fixed >= peak, solved, then settled on
  // the exact byte (the rounding moves it by one or two).
  Bytes budget = static_cast<Bytes>(std::ceil(static_cast<double>(peak + fixed) / (1 - share)));
  while (!holds(budget)) ++budget;
  while (budget > 1 && holds(budget - 1)) --budget;
  // The headroom only grows by less than a byte per byte of budget, so any
  // larger budget holds the peak too, the printed one included.
  return printedCeiling(budget);
}

}  // namespace gcprof::advisor

#include "plan/headroom.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "byte_text.h"
#include "saturating.h"

namespace gcprof::advisor {

Bytes stepPeakJitter(const Trace& trace, const AllocationFilter& filter, int64_t first_step,
                     const RecordedEvents* recorded) {
  std::vector<StepPeak> peaks =
      recorded ? stepPeaksOf(*recorded, trace.steps) : stepPeaks(trace, memoryCurve(trace, filter));
  Bytes lo = -1, hi = 0;
  for (const StepPeak& s : peaks) {
    if (s.step < first_step || s.end <= s.start) continue;
    lo = lo < 0 ? s.peak : std::min(lo, s.peak);
    hi = std::max(hi, s.peak);
  }
  return lo < 0 ? 0 : hi - lo;
}

double defaultShare(const TraceMargins& m) {
  return m.device ? kDeviceHeadroom : m.native ? kNativeHeadroom : kShimHeadroom;
}

namespace {

// The bytes the default rule keeps whatever the budget.
Bytes toldBytes(const TraceMargins& m) { return sat::add(m.jitter, m.untold_arguments); }

std::string percentText(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%g%%", fraction * 100);
  return text;
}

}  // namespace

Headroom resolveHeadroom(const HeadroomRequest& request, Bytes budget, const TraceMargins& margins) {
  Headroom h;
  h.margins = margins;
  if (request.given) {
    // An explicit margin is taken as written: the user may know better
    // (a fixed allocator, a pinned workload) and 0 must mean none.
    h.fraction = request.percent ? request.fraction : 0;
    h.bytes = request.percent ? static_cast<Bytes>(std::llround(request.fraction * static_cast<double>(budget)))
                              : request.bytes;
    h.rule = request.text + (request.percent ? " of the budget" : "") + " (--headroom)";
    return h;
  }
  h.fraction = defaultShare(margins);
  h.bytes = sat::add(static_cast<Bytes>(std::llround(h.fraction * static_cast<double>(budget))), toldBytes(margins));
  h.rule = percentText(h.fraction) + " of the budget" +
           (margins.device ? " (CUDA allocator rounding)"
                           : margins.native ? " (C++ runtime)" : "") +
           " + " + formatBytes(margins.jitter) + " step-to-step jitter";
  if (margins.untold_arguments > 0)
    h.rule += " + " + formatBytes(margins.untold_arguments) + " checkpoint arguments not told apart by size";
  return h;
}

namespace {
// Far above any memory, far below where int64 overflows (as parseBytes).
constexpr double kLargestBudget = 4.611686018427388e18;
}  // namespace

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
    if (!((shown + 1) * unit < kLargestBudget)) return b;  // beyond any budget: as it is
    Bytes back = std::llround(shown * unit);
    if (back >= b) return back;
    // One printed digit up: formatBytes keeps three significant digits.
    size_t dot = text.find('.'), space = text.find(' ');
    int decimals = dot == std::string::npos ? 0 : static_cast<int>(space - dot - 1);
    c = std::llround((shown + std::pow(10.0, -decimals)) * unit);
  }
  return b;  // not reached: one step up always prints at or above b
}

Bytes leastBudgetFor(Bytes peak, const HeadroomRequest& request, const TraceMargins& margins) {
  auto holds = [&](Bytes budget) {
    return budget - resolveHeadroom(request, budget, margins).bytes >= peak;
  };
  double share = request.given ? (request.percent ? request.fraction : 0) : defaultShare(margins);
  if (share >= 1) return -1;
  if (peak <= 0) return 0;
  Bytes fixed = request.given ? (request.percent ? 0 : request.bytes) : toldBytes(margins);
  // budget - round(share * budget) - fixed >= peak, solved in doubles, then
  // settled on the exact byte: the budget holds the peak from one byte on
  // (the headroom grows by less than a byte per byte of budget), so the
  // least one is bisected below an estimate that holds.
  double estimate = std::ceil(static_cast<double>(sat::add(peak, fixed)) / (1 - share));
  if (!(estimate < kLargestBudget)) return -1;
  Bytes hi = static_cast<Bytes>(estimate);
  for (Bytes step = 1; !holds(hi); step = sat::add(step, step)) {
    if (hi > static_cast<Bytes>(kLargestBudget) - step) return -1;  // no budget in range holds it
    hi += step;
  }
  Bytes lo = 0;  // holds nothing: peak > 0
  while (hi - lo > 1) {
    Bytes mid = lo + (hi - lo) / 2;
    (holds(mid) ? hi : lo) = mid;
  }
  return printedCeiling(hi);
}

}  // namespace gcprof::advisor

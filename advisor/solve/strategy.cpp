#include "solve/strategy.h"

#include "advice_error.h"

namespace gcprof::advisor {

std::string toString(Strategy s) {
  switch (s) {
    case Strategy::None: return "none";
    case Strategy::Every: return "every";
    case Strategy::Uniform: return "uniform";
    case Strategy::Optimal: return "optimal";
    case Strategy::Matmuls: return "matmuls";
  }
  return "?";
}

std::string toString(SegmentKind k) { return k == SegmentKind::Module ? "module" : "region"; }

Strategy parseStrategy(const std::string& s) {
  if (s == "none") return Strategy::None;
  if (s == "every") return Strategy::Every;
  if (s == "uniform") return Strategy::Uniform;
  if (s == "optimal") return Strategy::Optimal;
  if (s == "matmuls") return Strategy::Matmuls;
  throw AdviceError("--strategy " + s + ": expected optimal, uniform, every, matmuls or none");
}

SegmentKind segmentKindFor(const std::string& runtime) {
  return runtime == "python" ? SegmentKind::Module : SegmentKind::Region;
}

}  // namespace gcprof::advisor

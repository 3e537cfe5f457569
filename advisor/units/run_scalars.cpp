#include "units/run_scalars.h"

#include <cmath>
#include <vector>

#include "median.h"
#include "saturating.h"

namespace gcprof::advisor {

Ns medianScalar(const Trace& trace, const std::string& name) {
  std::vector<double> v;
  for (const Scalar& s : trace.scalars)
    if (s.name == name && s.value > 0) v.push_back(s.value);
  if (v.empty()) return 0;
  return sat::fromDouble(std::round(median(std::move(v))));
}

}  // namespace gcprof::advisor

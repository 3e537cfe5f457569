// Numbers as people read them in the advisor's terminal output.
#pragma once

#include <cstdio>
#include <string>

#include "size_parse.h"
#include "trace.h"

namespace gcprof::cli {

inline std::string formatNs(Ns ns) {
  char buf[32];
  double v = static_cast<double>(ns);
  if (ns < 10000) std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else if (ns < 10000000) std::snprintf(buf, sizeof buf, "%.1f us", v / 1e3);
  else if (ns < 10000000000LL) std::snprintf(buf, sizeof buf, "%.1f ms", v / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f s", v / 1e9);
  return buf;
}

inline std::string formatPercent(double fraction, bool sign = false) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", fraction * 100);
  return buf;
}

}  // namespace gcprof::cli

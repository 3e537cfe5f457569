#include "byte_text.h"

#include <cmath>
#include <cstdio>

namespace gcprof {

std::string formatBytes(Bytes b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = std::fabs(static_cast<double>(b));  // -b overflows for INT64_MIN
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  const char* sign = b < 0 ? "-" : "";
  char buf[48];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%s%lld B", sign, static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof buf, "%s%.*f %s", sign, v < 10 ? 2 : (v < 100 ? 1 : 0), v, units[u]);
  return buf;
}

std::string formatDuration(double ns) {
  char buf[48];
  double a = std::fabs(ns);
  if (a < 1e3) std::snprintf(buf, sizeof buf, "%.0f ns", ns);
  else if (a < 1e6) std::snprintf(buf, sizeof buf, "%.*f us", a < 1e4 ? 2 : 1, ns / 1e3);
  else if (a < 1e9) std::snprintf(buf, sizeof buf, "%.*f ms", a < 1e7 ? 2 : 1, ns / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
  return buf;
}

}  // namespace gcprof

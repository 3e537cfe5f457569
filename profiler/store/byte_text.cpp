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

}  // namespace gcprof

// Numbers as people read them in the advisor's terminal output.
#pragma once

#include <cstdio>
#include <string>

#include "byte_text.h"
#include "size_parse.h"
#include "trace.h"

namespace gcprof::cli {

inline std::string formatPercent(double fraction, bool sign = false) {
  char buf[32];
  std::snprintf(buf, sizeof buf, sign ? "%+.1f%%" : "%.1f%%", fraction * 100);
  return buf;
}

}  // namespace gcprof::cli

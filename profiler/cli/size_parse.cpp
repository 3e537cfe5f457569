#include "size_parse.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace gcprof::cli {

long long parseBytes(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + text + "' is not a size (e.g. 1.5GiB, 512MiB, 4096)");
  }
  std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB" || unit == "K" || unit == "k") scale = 1024.0;
  else if (unit == "MiB" || unit == "M") scale = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB" || unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "KB" || unit == "kB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  if (scale == 0 || v < 0)
    throw std::invalid_argument("'" + text + "' is not a size (units: B, KiB, MiB, GiB)");
  return std::llround(v * scale);
}

double parsePercent(const std::string& text) {
  if (text.empty() || text.back() != '%')
    throw std::invalid_argument("'" + text + "' is not a percentage (e.g. 30%)");
  try {
    return std::stod(text.substr(0, text.size() - 1)) / 100.0;
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + text + "' is not a percentage (e.g. 30%)");
  }
}

}  // namespace gcprof::cli

#include "size_parse.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace gcprof::cli {
namespace {

// A plain decimal number at the start of `text` (digits, a point, an
// exponent); `used` gets its length. strtod alone also takes hex, "inf",
// "nan" and a sign, none of which is a size or a percentage.
bool leadingDecimal(const std::string& text, double& v, size_t& used) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'))
    return false;
  if (text.size() > 1 && (text[1] == 'x' || text[1] == 'X')) return false;
  const char* begin = text.c_str();
  char* end = nullptr;
  v = std::strtod(begin, &end);
  used = static_cast<size_t>(end - begin);
  return used > 0 && std::isfinite(v);
}

}  // namespace

long long parseBytes(const std::string& text) {
  size_t used = 0;
  double v = 0;
  if (!leadingDecimal(text, v, used))
    throw std::invalid_argument("'" + text + "' is not a size (e.g. 1.5GiB, 512MiB, 4096)");
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
  if (scale == 0)
    throw std::invalid_argument("'" + text + "' is not a size (units: B, KiB, MiB, GiB)");
  // 2^62 bytes (4 EiB): far above any memory, far below where int64 overflows.
  if (v * scale > 4.611686018427388e18)
    throw std::invalid_argument("'" + text + "' is too large for a size in bytes");
  return std::llround(v * scale);
}

double parsePercent(const std::string& text) {
  size_t used = 0;
  double v = 0;
  if (text.empty() || text.back() != '%' || !leadingDecimal(text, v, used) ||
      used != text.size() - 1)
    throw std::invalid_argument("'" + text + "' is not a percentage (e.g. 30%)");
  return v / 100.0;
}

StepWindow parseStepWindow(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("--steps '" + text + "': " + why +
                                 " (A:B records steps A..B-1, A: from step A on)");
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos) throw bad("expected A:B or A:");
  auto index = [&](const std::string& part, const char* which) {
    if (part.empty() || part.size() > 15 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      throw bad(std::string(which) + " must be a step number");
    return std::stoll(part);
  };
  StepWindow w;
  w.from = index(text.substr(0, colon), "A");
  std::string to = text.substr(colon + 1);
  if (!to.empty()) {
    w.to = index(to, "B");
    if (w.to <= w.from) throw bad("B must be above A, or no step is recorded");
  }
  return w;
}

int parseFlushWaitMs(const std::string& text) {
  size_t used = 0;
  double s = -1;
  try {
    s = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(s >= 0 && s <= 3600))
    throw std::invalid_argument("--flush-wait '" + text + "': want seconds from 0 to 3600");
  return static_cast<int>(s * 1000);
}

}  // namespace gcprof::cli

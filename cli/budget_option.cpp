#include "budget_option.h"

#include <stdexcept>

#include "size_parse.h"

namespace gcprof::cli {

advisor::Budget parseBudget(const std::string& text) {
  advisor::Budget b;
  b.text = text;
  if (!text.empty() && text.back() == '%') {
    b.percent = true;
    b.fraction = parsePercent(text);
    if (b.fraction <= 0) throw std::invalid_argument("'" + text + "' must be above 0%");
    return b;
  }
  b.bytes = parseBytes(text);
  if (text.find_first_not_of("0123456789.") == std::string::npos)
    throw std::invalid_argument("'" + text + "' has no unit; write " + text + "% (of the recorded peak) or " + text +
                                "MiB / " + text + "GiB");
  return b;
}

}  // namespace gcprof::cli

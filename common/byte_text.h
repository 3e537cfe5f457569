// Sizes and durations as people read them, the same in the CLI, the reports
// and the GUI (the one place that spells them).
#pragma once

#include <string>

#include "units.h"

namespace gcprof {

// "512 B", "1.50 GiB", "42.8 MiB": three significant digits, binary units.
std::string formatBytes(Bytes b);

// "850 ns", "1.25 us", "12.3 ms", "2.10 s"; negative spans keep their sign.
std::string formatDuration(double ns);
inline std::string formatNs(Ns ns) { return formatDuration(static_cast<double>(ns)); }

}  // namespace gcprof

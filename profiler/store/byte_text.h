// Sizes as people read them, the same in the CLI, the reports and the GUI.
#pragma once

#include <string>

#include "trace.h"

namespace gcprof {

// "512 B", "1.50 GiB", "42.8 MiB": three significant digits, binary units.
std::string formatBytes(Bytes b);

}  // namespace gcprof

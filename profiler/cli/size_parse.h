// Sizes and durations as users write them: 1.5GiB, 512MiB, 4096, 60%.
#pragma once

#include <string>

#include "byte_text.h"

namespace gcprof::cli {

// Bytes from "N", "NB", "NKiB", "NMiB", "NGiB" (also KB/MB/GB as powers of 1000).
// Throws std::invalid_argument naming the text.
long long parseBytes(const std::string& text);

// "30%" -> 0.30. Throws std::invalid_argument.
double parsePercent(const std::string& text);

}  // namespace gcprof::cli

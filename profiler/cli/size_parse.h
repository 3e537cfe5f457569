// Sizes and durations as users write them: 1.5GiB, 512MiB, 4096, 60%.
#pragma once

#include <string>

namespace gcprof::cli {

// Bytes from "N", "NB", "NKiB", "NMiB", "NGiB" (also KB/MB/GB as powers of 1000).
// Throws std::invalid_argument naming the text.
long long parseBytes(const std::string& text);

// A budget: bytes, or a percentage of `reference` ("60%").
long long parseBudget(const std::string& text, long long reference);

// "30%" -> 0.30. Throws std::invalid_argument.
double parsePercent(const std::string& text);

// Human-readable bytes: "1.50 GiB".
std::string formatBytes(long long bytes);

}  // namespace gcprof::cli

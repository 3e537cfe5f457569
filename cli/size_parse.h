// Sizes, percentages and step windows as users write them on the command
// line: 1.5GiB, 512MiB, 4096, 60%, 10:12, and the seconds of --flush-wait.
#pragma once

#include <string>

#include "byte_text.h"

namespace gcprof::cli {

// Bytes from "N", "NB", "NKiB", "NMiB", "NGiB" (also KB/MB/GB as powers of 1000).
// Throws std::invalid_argument naming the text.
long long parseBytes(const std::string& text);

// "30%" -> 0.30; a plain non-negative number before the '%'. Throws
// std::invalid_argument.
double parsePercent(const std::string& text);

// `record --steps`: "A:B" records steps A..B-1, "A:" from step A on.
struct StepWindow {
  long long from = 0;
  long long to = -1;  // -1 = open-ended
};
// Throws std::invalid_argument naming the text and what is wrong.
StepWindow parseStepWindow(const std::string& text);

// `record --flush-wait` and `verify --flush-wait`: seconds from 0 to 3600 (a
// job that was asked to stop must stop), returned in milliseconds. Throws
// std::invalid_argument naming the option and the text.
int parseFlushWaitMs(const std::string& text);

}  // namespace gcprof::cli

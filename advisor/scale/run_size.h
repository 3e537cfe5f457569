// Which recorded runs are the same job at different sizes, and at which size:
// from their names (`gcprof record --name batch=4`) or given explicitly
// (`advise --size-of RUN=SIZE`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "trace.h"

namespace gcprof::advisor {

struct RunSize {
  int64_t run = 0;
  std::string name;   // what the size counts: batch, seq, ...
  int64_t size = 0;
};

// "batch=4" -> {batch, 4}; nullopt when the name is not NAME=positive integer.
std::optional<RunSize> sizeFromName(const RunInfo& run);

// The runs named `name`=N (any one name when `name` is empty, which must then
// be the only such name), leaving out verification runs. Throws AdviceError
// naming the trace's runs when fewer than two match.
std::vector<RunSize> sizedRuns(const std::vector<RunInfo>& runs, const std::string& name,
                               const std::string& trace);

// "3=16" -> run 3 at size 16. Throws AdviceError on anything else.
RunSize parseSizeOf(const std::string& text, const std::string& name);

}  // namespace gcprof::advisor

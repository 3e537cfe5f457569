// What the command line asks gcprof-gui to show first (--run, --plan,
// --step, --frames), checked before a window opens or a run is loaded: a
// plan or step the run lacks, or a number that cannot be one, is refused
// with what the file has instead of being ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gcprof::view {

struct StartChoice {
  int64_t run = 0;              // 0: the run TraceDocument::open picks
  std::optional<int64_t> plan;  // 0: none
  std::optional<int64_t> step;  // a step index as recorded
  int frames = 3;               // rendered before a screenshot
};

// "" when the numbers can be right; else what is wrong (no file is read).
std::string checkStartNumbers(const StartChoice& c);

// "" when `path` has the run, plan and step asked for; else what is wrong
// and what the file has ("--plan 99: trace.db has no plan 99 for run 1; it
// has plans 1-2"). A file that cannot be read at all passes: opening it
// says why, as it does without these options.
std::string checkStartChoice(const std::string& path, const StartChoice& c);

// Ascending ids as people read them: "0-9", "1, 3, 5-7"; "none" when empty.
std::string idRanges(std::vector<int64_t> ids);

}  // namespace gcprof::view

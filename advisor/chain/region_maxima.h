// The live-byte maxima of each region (forward, gap, backward of each unit)
// of every complete step: what the unit chain's peaks are an envelope of.
#pragma once

#include <string>
#include <vector>

#include "memory/memory_events.h"
#include "units/step_regions.h"
#include "trace.h"

namespace gcprof::advisor {

// Live-byte maxima of the regions of every complete step, entry levels included.
struct RegionMaxima {
  std::vector<std::vector<Bytes>> per_step;  // [complete step][region]
  // [complete step][region]: RegionInstants; empty regions when not kept
  // (a local maximum per allocation cycle: hundreds of MB on a big run).
  std::vector<std::vector<std::vector<Bytes>>> instants;
  Bytes outside = 0;
  std::string outside_where = "nowhere (no memory recorded)";
};

// `entering` receives each region's level as it is entered; with
// `keep_instants` the local maxima of each region are kept too.
RegionMaxima regionMaxima(const Trace& trace, const RecordedEvents& events,
                          const std::vector<const StepLayout*>& steps,
                          const std::vector<StepRegions>& regions,
                          std::vector<std::vector<Bytes>>& entering, bool keep_instants);

}  // namespace gcprof::advisor

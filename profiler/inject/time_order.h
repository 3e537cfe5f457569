// Puts a writer round's events in time order. The round is a few runs that
// are each in order already: what the last round kept back (younger than the
// reorder window), then each thread's ring in turn (a thread's clock reads
// only go forward). Merging those runs costs O(n log runs) with no comparison
// sort; the result is what std::stable_sort by time gives (equal times keep
// their order), whatever the input, runs or not.
#pragma once

#include <vector>

#include "event_processor.h"

namespace gcprof::inject {

// `scratch` is the merge's second buffer, kept by the caller between rounds
// so that a round allocates nothing once the buffers have grown.
void sortByTime(std::vector<Stamped>& events, std::vector<Stamped>& scratch);

}  // namespace gcprof::inject

// A run in the Chrome trace event format (chrome://tracing, Perfetto):
// ranges as slices per thread, live memory as a counter track, steps as
// instants, CUDA kernels as slices per stream.
#pragma once

#include <nlohmann/json.hpp>

#include "trace.h"

namespace gcprof::advisor {

// `max_counter_points` bounds the memory track (peaks are kept).
nlohmann::json chromeTrace(const Trace& trace, size_t max_counter_points = 200000);

}  // namespace gcprof::advisor

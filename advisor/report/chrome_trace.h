// A run in the Chrome trace event format (chrome://tracing, Perfetto):
// ranges as slices per thread, live memory as a counter track, steps as
// instants, CUDA kernels as slices per stream.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "memory/streamed_curve.h"
#include "trace.h"

namespace gcprof::advisor {

constexpr size_t kMaxCounterPoints = 200000;

// Writes the document to `write` a few bytes at a time as it is made, one
// event after another (each one nlohmann::json's dump of it, the text the
// whole document's dump() gives), never holding them all: `run` gives the
// ranges, steps, scalars and kernels (its allocations are not read), and
// `allocations` the allocations, by time, in two passes (streamed_curve.h).
// `max_counter_points` bounds the memory track (peaks are kept). Returns
// the number of events.
size_t writeChromeTrace(const Trace& run, const AllocationPass& allocations,
                        const std::function<void(std::string_view text)>& write,
                        size_t max_counter_points = kMaxCounterPoints);

// The same of a Trace held whole, as one document.
nlohmann::json chromeTrace(const Trace& trace, size_t max_counter_points = kMaxCounterPoints);

}  // namespace gcprof::advisor

// Reading one recorded run's rows into a Trace, in time order: ranges,
// allocations (plain rows and, from version 4, batches), steps, scalars
// and kernels.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schema.h"
#include "trace.h"

namespace gcprof {

// `run` is the run's row; `progress` (may be empty) hears (rows read, rows
// in all) every 65,536 rows. Throws StoreError naming `path` and the row on
// a damaged trace. Without allocations, the Trace's are left empty (a
// caller reading them a piece at a time: allocation_stream.h).
Trace loadTrace(sqlite3* db, const std::string& path, int version, const RunInfo& run,
                const std::function<void(int64_t done, int64_t total)>& progress, bool with_allocations = true);

// The error of a batch of `KIND_batches` (batch_base.h) that does not
// parse: the file, the run, the batch by its first id, and `problem`.
StoreError damagedBatch(const std::string& path, int64_t run, const std::string& kind, int64_t first_id,
                        const std::string& problem);

// The ranges of run `run` alone, in id order (kernel time attribution).
std::vector<Range> loadRanges(sqlite3* db, const std::string& path, int version, int64_t run);

}  // namespace gcprof

// Allocation rows packed many to one row of `allocation_batches` (schema
// version 4, docs/schema.md): the recorder's per-row SQLite work (a VDBE
// program, 13 bound values and a B-tree insert per allocation) was most of
// the allocation storm's cost (bench/history/recording-overhead.md). A batch is JSON
// text, an array of rows `[id - first_id, addr, bytes, device, stream, thread,
// api, alloc_ns - base_ns, lifetime, range, step, kind]` (lifetime = free_ns -
// alloc_ns, -1 for a block still live), so that the `allocations` view can
// expand it with SQLite's own json_each for any SQL reader; gcprof's loader
// parses it here, without SQL. Times and ids relative to the batch's columns
// keep a row at ~55 bytes instead of ~80.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "allocation_blocks.h"
#include "batch_base.h"
#include "trace.h"

namespace gcprof {

// Appends one row to `batch` (an open batch: "[" after begin, rows separated
// by commas) and returns true; false, leaving `batch` as it was, when the row
// cannot be written relative to `base` exactly (a difference past int64, a
// free before the allocation): the caller writes such a row on its own.
// closeBatch ends the batch (batch_base.h).
bool appendToBatch(std::string& batch, const BatchBase& base, const RecordedAllocation& a);

// Parses a batch into `out` (appended; `run` is not part of the text).
// Returns false and says what is wrong in `problem` on malformed text.
bool parseBatch(std::string_view text, const BatchBase& base, std::vector<RecordedAllocation>& out,
                std::string& problem);
// The same into blocks (the loader's: no copy in between), each row's stream
// and thread kept in `contexts`. On malformed text the rows before the fault
// stay in `out`.
bool parseBatch(std::string_view text, const BatchBase& base, AllocationBlocks& out, AllocationContexts& contexts,
                std::string& problem);
// The same into a vector (the allocation stream's: one batch at a time).
bool parseBatch(std::string_view text, const BatchBase& base, std::vector<Allocation>& out,
                AllocationContexts& contexts, std::string& problem);

}  // namespace gcprof

// Range rows packed many to one row of `range_batches` (schema version 5,
// docs/schema.md), as allocation_batch.h does for allocations: one INSERT
// per range (a VDBE program, 14 bound values, a B-tree insert) was a third
// of the writer thread of a short-step job, which writes ~170 ranges a step
// (bench/RESULTS.md, "Cost per module call"). A batch is JSON text, an array
// of rows `[id - first_id, "name", domain, phase, thread, depth, parent,
// start_ns - base_ns, end_ns - start_ns, step, device_ns, input_bytes,
// output_bytes]`, so that the `ranges` view can expand it with SQLite's own
// json_each for any SQL reader; gcprof's loader parses it here. A range's
// kernel time is not in its batch: attributeKernelTime writes it to
// `range_device_time` once the run has ended.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "batch_base.h"
#include "trace.h"

namespace gcprof {

// Appends one range (its name valid UTF-8) to `batch`, a batch begun with
// beginBatch (batch_base.h) and ended with closeBatch, and returns
// true; false, leaving `batch` as it was, when the row cannot be written
// relative to `base` exactly (a difference past int64): the caller writes
// such a row on its own.
bool appendToBatch(std::string& batch, const BatchBase& base, const Range& r);

// Parses a batch into `out` (appended; `run` is not part of the text).
// Returns false and says what is wrong in `problem` on malformed text; the
// rows before the fault stay in `out`.
bool parseRangeBatch(std::string_view text, const BatchBase& base, std::vector<Range>& out, std::string& problem);

}  // namespace gcprof

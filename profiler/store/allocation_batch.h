// Allocation rows packed many to one row of `allocation_batches` (schema
// version 4, docs/schema.md): the recorder's per-row SQLite work (a VDBE
// program, 13 bound values and a B-tree insert per allocation) was most of
// the allocation storm's cost (bench/RESULTS.md, issue 14). A batch is JSON
// text, an array of rows `[id,addr,bytes,device,stream,thread,api,alloc_ns,
// free_ns,range,step,kind]`, so that the `allocations` view can expand it
// with SQLite's own json_each for any SQL reader; gcprof's loader parses it
// here, without SQL.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trace.h"

namespace gcprof {

// Appends one row to `batch` (an open batch: "[" after begin, rows separated
// by commas); closeBatch ends it.
void beginBatch(std::string& batch);
void appendToBatch(std::string& batch, const Allocation& a);
void closeBatch(std::string& batch);

// Parses a batch into `out` (appended; `run` is not part of the text).
// Returns false and says what is wrong in `problem` on malformed text.
bool parseBatch(std::string_view text, std::vector<Allocation>& out, std::string& problem);

}  // namespace gcprof

// What the batches of allocation_batches and range_batches (docs/schema.md)
// share: the columns their rows are relative to, and the JSON array around
// the rows.
#pragma once

#include <cstdint>
#include <string>

#include "units.h"

namespace gcprof {

struct BatchBase {
  int64_t first_id = 0;
  Ns base_ns = 0;
};

// An open batch is "[" and rows separated by commas; closeBatch ends it.
inline void beginBatch(std::string& batch) {
  batch.clear();
  batch.push_back('[');
}
inline void closeBatch(std::string& batch) { batch.push_back(']'); }

// A batch being filled by the writer: its text, how many rows it holds, what
// they are relative to, the largest id among them (ranges are written when
// they close, so not in id order) and, for allocations, the earliest
// alloc_ns among them (allocation_batch_starts).
struct OpenBatch {
  std::string text = "[";
  int rows = 0;
  BatchBase base;
  int64_t last_id = 0;
  Ns earliest = 0;
};

}  // namespace gcprof

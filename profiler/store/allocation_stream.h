// A run's allocations handed over a piece at a time, in the order a loaded
// Trace holds them ((alloc_ns, id)), each with its free time (version 6:
// `allocation_frees`) applied, none kept once handed over: a reader that
// sweeps the run in time order (the memory counter of `gcprof export`) holds
// a piece and the rows not yet in order, not the run (56 bytes a row: 560 MB
// at ten million).
//
// Batches (docs/schema.md) are written at their rows' free, so their rows
// are not in time order, and a batch's base_ns is its first row's, not its
// earliest. The stream reads where each batch starts (version 7:
// allocation_batch_starts; an older batch is parsed once to learn it), then
// merges: a batch is parsed and sorted when the rows handed over reach its
// start, and its rows go as the merge reaches them. The
// recorder writes a block at its free or at most ~50 ms after it was made,
// so the batches open at once are those of a few rounds of the writer.
#pragma once

#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "allocation_contexts.h"
#include "trace.h"
#include "trace_store.h"

namespace gcprof {

class AllocationStream {
 public:
  static constexpr size_t kPieceRows = 65536;  // 3.5 MiB of rows
  // Opens a read transaction on `store` (when none is open) so that every
  // read() and anything else read through `store` meanwhile see the same
  // rows, even while a recorder writes into the file; it ends with the
  // stream. Reads where every batch starts. Throws StoreError naming the
  // file on a damaged batch.
  AllocationStream(TraceStore& store, int64_t run, size_t piece_rows = kPieceRows);
  ~AllocationStream();
  AllocationStream(const AllocationStream&) = delete;
  AllocationStream& operator=(const AllocationStream&) = delete;

  // Reads the run's allocations from the first, calling `take` with
  // consecutive pieces of at most piece_rows rows (none empty); each piece
  // is valid during the call. May be called again (a second pass).
  using Take = std::function<void(const std::vector<Allocation>& piece)>;
  void read(const Take& take);

  // The streams and threads of the rows read so far (Allocation::context).
  const AllocationContexts& contexts() const { return contexts_; }
  int64_t rows() const { return rows_; }  // in the run, known once read

 private:
  // A batch by where its earliest row falls.
  struct BatchStart {
    Ns alloc = 0;
    int64_t id = 0;
    int64_t rowid = 0;
  };
  // The id of a start read from allocation_batch_starts, which holds the
  // time only: the batch opens before any row of that time.
  static constexpr int64_t kStoredStart = INT64_MIN;
  void findBatchStarts();
  // Batch `b`'s rows, sorted, into `out`; a stored start is checked against them.
  void readBatch(const BatchStart& b, std::vector<Allocation>& out);

  sqlite3* db_;
  std::string path_;
  int version_;
  int64_t run_;
  size_t piece_rows_;
  bool own_transaction_ = false;
  AllocationContexts contexts_;
  std::vector<BatchStart> batches_;  // by (alloc, id) of their earliest row
  int64_t rows_ = 0;
};

}  // namespace gcprof

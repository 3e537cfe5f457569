// Appends one run's events to a trace file in batched transactions. Used by
// the injector's writer thread (the only thread that touches SQLite in a
// recorded process) and by tests that build traces by hand.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "allocation_batch.h"
#include "trace.h"

namespace gcprof {

class RunWriter {
 public:
  // Opens `path` (creating the schema when empty). Throws StoreError.
  explicit RunWriter(const std::string& path);
  ~RunWriter();
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  int64_t createRun(const RunInfo& info);  // also selects it for the appends below
  // Appends to an existing run (its rows numbered on after those it holds,
  // and the range ids given to add() after its ranges': the same process
  // after an exec numbers its ranges from 1 again).
  void selectRun(int64_t run);
  int64_t run() const { return run_; }

  // Appends open a transaction when none is open; commit() ends it, so the
  // write lock is held only while a batch is written. Allocations are written
  // up to kAllocationBatch to one row of `allocation_batches` (schema version
  // 4, allocation_batch.h: per-row SQLite work was most of an allocation
  // storm's cost), ranges likewise to `range_batches` (version 5), the rest
  // of a batch at commit(); allocation rows are numbered (`id`) in the order
  // of the calls.
  void begin();
  void commit();
  void add(const Range& r);
  void add(const RecordedAllocation& a);
  // A block written while still live (free_ns -1), as add() writes it
  // (committed with the round like any row), returning its id (the
  // allocations.id the writer numbers rows with, in call order) for setFree.
  int64_t addLive(const RecordedAllocation& a);
  // Sets the free time of an allocation written while it was live: `a` as
  // given to addLive, with its id and free time, a row of
  // `allocation_frees` (schema version 6, allocation_frees.h).
  void setFree(const Allocation& a);
  void add(const Step& s);
  void add(const Scalar& s);
  void add(const Kernel& k);
  // Writes a whole in-memory run (a status of "" becomes "complete") and
  // returns its id: traces built by hand in tests, runs copied between files.
  int64_t appendRun(const Trace& t);

  // Sets each range's device_ns to the device time of the kernels launched
  // inside it or inside its children (CUDA runs; a no-op without kernels),
  // in range_device_time (kernel_time.h).
  void attributeKernelTime();
  // Final counters and status of the run ("complete", "interrupted", ...).
  void finish(const RunInfo& counters);

  const std::string& path() const { return path_; }

 private:
  sqlite3_stmt* prepare(const char* sql);
  void done(sqlite3_stmt* st);
  void stepTransaction(sqlite3_stmt* st, const char* what);  // BEGIN or COMMIT
  // Writes `batch` as one row through `insert` and opens the next.
  void flush(OpenBatch& batch, sqlite3_stmt* insert);
  // flush() for the allocation batch, with its row of allocation_batch_starts.
  void flushAllocations();
  void flushBatches() {
    flush(range_batch_, range_batch_insert_);
    flushAllocations();
  }

  // ~90 KiB of text per batch. Beyond a few hundred rows the cost per row no
  // longer falls (bench/history/recording-overhead.md).
  static constexpr int kAllocationBatch = 1024;

  // Ranges go up to kRangeBatch to one row of `range_batches` (schema
  // version 5, range_batch.h), the rest at commit(): ~40 KiB of text.
  static constexpr int kRangeBatch = 512;

  std::string path_;
  sqlite3* db_ = nullptr;
  int64_t run_ = 0;
  int64_t next_id_ = 1;  // allocations.id of the next row of run_
  int64_t range_base_ = 0;  // added to every range id written (selectRun)
  int64_t rangeRow(int64_t id) const { return id > 0 ? id + range_base_ : id; }
  bool in_tx_ = false;
  sqlite3_stmt* range_row_ = nullptr;  // a row of range_rows
  sqlite3_stmt* range_batch_insert_ = nullptr;
  OpenBatch range_batch_;  // range_batch.h
  Range range_;  // the range being written: its name made valid UTF-8, ids shifted
  sqlite3_stmt* alloc_ = nullptr;
  sqlite3_stmt* allocation_batch_insert_ = nullptr;
  OpenBatch allocation_batch_;  // allocation_batch.h
  sqlite3_stmt* allocation_batch_start_ = nullptr;  // a row of allocation_batch_starts
  sqlite3_stmt* free_ = nullptr;  // a row of allocation_frees
  sqlite3_stmt* step_ = nullptr;
  sqlite3_stmt* scalar_ = nullptr;
  sqlite3_stmt* kernel_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
};

}  // namespace gcprof

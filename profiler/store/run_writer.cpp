#include "run_writer.h"
#include "bind_values.h"

#include <algorithm>

#include "allocation_batch.h"
#include "kernel_time.h"
#include "range_batch.h"
#include "run_row.h"
#include "schema.h"
#include "statement.h"
#include "trace_load.h"
#include "trace_store.h"
#include "utf8_text.h"

namespace gcprof {

RunWriter::RunWriter(const std::string& path) : path_(path) {
  // A connection of its own, used by one thread (the injector's writer):
  // SQLite need not lock its own mutexes on every call (NOMUTEX); other
  // processes and connections are still kept out by the file locks.
  if (sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string msg = path + ": cannot open for writing (" + sqlite3_errmsg(db_) + ")";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg);
  }
  // Several processes (ranks, a launcher's children) may append at once.
  sqlite3_busy_timeout(db_, TraceStore::kWriteWaitMs);
  try {
    ensureSchema(db_, path, true);
    exec(db_, path, "PRAGMA journal_mode=WAL");
    // A crash of the job (any signal, abort, the OOM killer) loses nothing
    // committed: a commit hands its pages to the OS, which keeps them whatever
    // becomes of the process. What a sync adds is safety from an OS crash or a
    // power loss, and NORMAL paid for it with two fdatasyncs per checkpoint
    // (every ~4 MiB of trace) on the writer thread: an allocation storm's
    // threads waited on full buffers while the writer waited on the disk (27
    // fdatasyncs, 0.29 s, in one traced 8-thread storm;
    // bench/history/recording-overhead.md). `record` syncs the whole file
    // once the job has ended (its last close: the default FULL), so the
    // finished trace is on the disk (docs/recording.md).
    exec(db_, path, "PRAGMA synchronous=OFF");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
  range_row_ = prepare(
      "INSERT INTO range_rows (run, id, name, domain, phase, thread, depth, parent, start_ns,"
      " end_ns, step, device_ns, input_bytes, output_bytes) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  range_batch_insert_ = prepare(
      "INSERT INTO range_batches (run, first_id, last_id, count, base_ns, rows) VALUES (?,?,?,?,?,?)");
  alloc_ = prepare(
      "INSERT INTO allocation_rows (run, addr, bytes, device, stream, thread, api, alloc_ns,"
      " free_ns, range, step, kind, id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
  allocation_batch_insert_ = prepare(
      "INSERT INTO allocation_batches (run, first_id, last_id, count, base_ns, rows)"
      " VALUES (?,?,?,?,?,?)");
  allocation_batch_start_ = prepare("INSERT INTO allocation_batch_starts (run, first_id, alloc_ns) VALUES (?,?,?)");
  begin_ = prepare("BEGIN IMMEDIATE");
  commit_ = prepare("COMMIT");
  free_ = prepare("INSERT INTO allocation_frees (run, alloc_ns, id, free_ns) VALUES (?,?,?,?)");
  step_ = prepare(
      "INSERT OR REPLACE INTO steps (run, step, start_ns, end_ns, peak_bytes) VALUES (?,?,?,?,?)");
  scalar_ = prepare("INSERT INTO scalars (run, step, name, value) VALUES (?,?,?,?)");
  kernel_ = prepare(
      "INSERT INTO kernels (run, name, device, stream, start_ns, end_ns, correlation, range)"
      " VALUES (?,?,?,?,?,?,?,?)");
}

RunWriter::~RunWriter() {
  if (in_tx_) {
    try {
      flushBatches();
    } catch (const StoreError&) {
      // A destructor cannot report it; what was written before is committed below.
    }
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  for (sqlite3_stmt* st : {range_row_, range_batch_insert_, alloc_, allocation_batch_insert_, allocation_batch_start_, free_, step_, scalar_, kernel_, begin_, commit_})
    sqlite3_finalize(st);
  sqlite3_close(db_);
}

sqlite3_stmt* RunWriter::prepare(const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK)
    throw StoreError(path_ + ": " + sqlite3_errmsg(db_));
  return st;
}

void RunWriter::done(sqlite3_stmt* st) {
  // Every statement binds all its parameters each time: no clear_bindings.
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) throw StoreError(path_ + ": write failed: " + sqlite3_errmsg(db_));
}

int64_t RunWriter::createRun(const RunInfo& r) {
  run_ = insertRun(db_, path_, r);
  next_id_ = 1;
  range_base_ = 0;
  return run_;
}

void RunWriter::selectRun(int64_t run) {
  // The run may hold rows already (the same process before an exec): number
  // on after them. One scan of the run's rows, once per process.
  sqlite3_stmt* st = prepare(
      "SELECT max(coalesce((SELECT max(id) FROM allocation_rows WHERE run=?1), 0),"
      " coalesce((SELECT max(last_id) FROM allocation_batches WHERE run=?1), 0))");
  sqlite3_bind_int64(st, 1, run);
  int rc = sqlite3_step(st);
  int64_t last = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) throw StoreError(path_ + ": cannot read run " + std::to_string(run) + ": " +
                                         sqlite3_errmsg(db_));
  // Range ids restart at 1 in a new process image: number them on after the
  // run's too (every reference to a range is shifted alike).
  st = prepare(
      "SELECT max(coalesce((SELECT max(id) FROM range_rows WHERE run=?1), 0),"
      " coalesce((SELECT max(last_id) FROM range_batches WHERE run=?1), 0))");
  sqlite3_bind_int64(st, 1, run);
  rc = sqlite3_step(st);
  int64_t last_range = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) throw StoreError(path_ + ": cannot read the ranges of run " +
                                         std::to_string(run) + ": " + sqlite3_errmsg(db_));
  run_ = run;
  next_id_ = last + 1;
  range_base_ = last_range;
}

// BEGIN and COMMIT are prepared once: a quiet round is little more than its
// transaction, and sqlite3_exec parsed both again every round (a quiet job's writer cost).
void RunWriter::begin() {
  if (in_tx_) return;
  stepTransaction(begin_, "(starting a transaction)");
  in_tx_ = true;
}

void RunWriter::commit() {
  if (!in_tx_) return;
  flushBatches();
  in_tx_ = false;
  stepTransaction(commit_, "(committing)");
}

void RunWriter::stepTransaction(sqlite3_stmt* st, const char* what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  // Another process past our busy timeout is named as such, as exec() does.
  if (rc != SQLITE_DONE) throw StoreError(sqliteProblem(db_, path_, what));
}

void RunWriter::add(const Range& r) {
  begin();
  Range& row = range_;
  row = r;  // the name keeps its capacity: no allocation once warm
  // Names come from the job (NVTX, the C API): bytes, not always UTF-8.
  if (!isValidUtf8(row.name)) row.name = validUtf8(row.name);
  row.id = rangeRow(r.id);
  row.parent = rangeRow(r.parent);
  OpenBatch& batch = range_batch_;
  if (batch.rows == 0) {
    batch.base = BatchBase{row.id, row.start};
    batch.last_id = row.id;
  }
  if (!appendToBatch(batch.text, batch.base, row)) {
    // Not expressible relative to the batch (hand-made extremes): a row of its own.
    bindValues(range_row_, 1, run_, row.id);
    sqlite3_bind_text(range_row_, 3, row.name.data(), static_cast<int>(row.name.size()), SQLITE_STATIC);
    bindValues(range_row_, 4, static_cast<int>(row.domain), static_cast<int>(row.phase), row.thread, row.depth,
               row.parent, row.start, row.end, row.step, row.device_ns, row.input_bytes, row.output_bytes);
    done(range_row_);
    return;
  }
  // A range is written when it closes, numbered when it opened: an outer
  // range comes after its children, with a smaller id.
  batch.last_id = std::max(batch.last_id, row.id);
  if (++batch.rows >= kRangeBatch) flush(batch, range_batch_insert_);
}

void RunWriter::flush(OpenBatch& batch, sqlite3_stmt* insert) {
  if (batch.rows == 0) return;
  closeBatch(batch.text);
  bindValues(insert, 1, run_, batch.base.first_id, batch.last_id, static_cast<int64_t>(batch.rows),
             batch.base.base_ns);
  // SQLITE_STATIC: the text is not touched until the statement is reset.
  sqlite3_bind_text(insert, 6, batch.text.data(), static_cast<int>(batch.text.size()), SQLITE_STATIC);
  batch.rows = 0;
  try {
    done(insert);
  } catch (...) {
    beginBatch(batch.text);  // not retried: the writer stops recording after a failed write
    throw;
  }
  beginBatch(batch.text);
}

void RunWriter::flushAllocations() {
  OpenBatch& batch = allocation_batch_;
  if (batch.rows == 0) return;
  const int64_t first_id = batch.base.first_id;
  const Ns earliest = batch.earliest;
  flush(batch, allocation_batch_insert_);
  bindValues(allocation_batch_start_, 1, run_, first_id, earliest);
  done(allocation_batch_start_);
}

namespace {

// Binds one allocation row at parameters first .. first + 12.
void bindAllocation(sqlite3_stmt* st, int first, int64_t run, const RecordedAllocation& a) {
  bindValues(st, first, run, static_cast<int64_t>(a.addr), a.bytes, static_cast<int>(a.device), a.stream, a.thread,
             static_cast<int>(a.api), a.alloc, a.free, a.range, a.step, static_cast<int>(a.kind), a.id);
}

}  // namespace

void RunWriter::add(const RecordedAllocation& a) {
  begin();
  RecordedAllocation numbered = a;
  numbered.id = next_id_++;  // numbered in the order of the calls
  numbered.range = rangeRow(a.range);
  OpenBatch& batch = allocation_batch_;
  if (batch.rows == 0) batch.base = BatchBase{numbered.id, numbered.alloc};
  if (!appendToBatch(batch.text, batch.base, numbered)) {
    // Not expressible relative to the batch (hand-made extremes): a row of its own.
    bindAllocation(alloc_, 1, run_, numbered);
    done(alloc_);
    return;
  }
  batch.last_id = numbered.id;
  batch.earliest = batch.rows == 0 ? numbered.alloc : std::min(batch.earliest, numbered.alloc);
  if (++batch.rows >= kAllocationBatch) flushAllocations();
}

int64_t RunWriter::addLive(const RecordedAllocation& a) {
  add(a);
  return next_id_ - 1;
}

void RunWriter::setFree(const Allocation& a) {
  begin();
  bindValues(free_, 1, run_, a.alloc, a.id, a.free);
  done(free_);
}

void RunWriter::add(const Step& s) {
  begin();
  bindValues(step_, 1, run_, s.index, s.start, s.end, s.peak);
  done(step_);
}

void RunWriter::add(const Scalar& s) {
  begin();
  bindValues(scalar_, 1, run_, s.step, validUtf8(s.name).c_str(), s.value);
  done(scalar_);
}

void RunWriter::add(const Kernel& k) {
  begin();
  bindValues(kernel_, 1, run_, validUtf8(k.name).c_str(), static_cast<int>(k.device), k.stream, k.start, k.end,
             k.correlation, rangeRow(k.range));
  done(kernel_);
}

int64_t RunWriter::appendRun(const Trace& t) {
  int64_t id = createRun(t.run);
  for (const Range& r : t.ranges) add(r);
  for (const Allocation& a : t.allocations) add(t.recorded(a));
  for (const Step& s : t.steps) add(s);
  for (const Scalar& s : t.scalars) add(s);
  for (const Kernel& k : t.kernels) add(k);
  RunInfo done = t.run;
  if (done.status.empty()) done.status = "complete";
  finish(done);
  return id;
}

void RunWriter::attributeKernelTime() {
  commit();
  std::vector<KernelSpan> kernels;
  {
    Stmt k(db_, path_, "SELECT range, end_ns - start_ns FROM kernels WHERE run=? AND range != 0");
    k.bind(1, run_);
    while (k.step()) kernels.push_back(KernelSpan{k.i64(0), k.i64(1)});
  }
  if (kernels.empty()) return;
  const std::vector<std::pair<int64_t, Ns>> time =
      kernelTimeByRange(loadRanges(db_, path_, kSchemaVersion, run_), kernels);
  begin();
  sqlite3_stmt* st = prepare("INSERT OR REPLACE INTO range_device_time (run, id, device_ns) VALUES (?,?,?)");
  try {
    for (const auto& [range, ns] : time) {
      bindValues(st, 1, run_, range, ns);
      done(st);
    }
  } catch (...) {
    sqlite3_finalize(st);
    throw;
  }
  sqlite3_finalize(st);
  commit();
}

void RunWriter::finish(const RunInfo& c) {
  commit();
  sqlite3_stmt* st = prepare(
      "UPDATE runs SET status=?, ended_ns=?, small_allocs=?, small_bytes=?, dropped_events=?,"
      " unmatched_frees=?, backend=?, runtime=?, exit_code=? WHERE id=?");
  bindValues(st, 1, c.status.c_str(), c.ended, c.small_allocs, c.small_bytes, c.dropped_events, c.unmatched_frees,
             c.backend.empty() ? "host" : c.backend.c_str(), c.runtime.empty() ? "native" : c.runtime.c_str(),
             c.exit_code, run_);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) throw StoreError(path_ + ": cannot finish run: " + sqlite3_errmsg(db_));
}

}  // namespace gcprof

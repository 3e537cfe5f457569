#include "run_writer.h"
#include "bind_values.h"

#include "allocation_batch.h"
#include "run_row.h"
#include "schema.h"
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
  const std::string insert_range =
      "INSERT INTO ranges (run, id, name, domain, phase, thread, depth, parent, start_ns,"
      " end_ns, step, device_ns, input_bytes, output_bytes) VALUES ";
  const std::string range_values = "(?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  std::string group = insert_range + range_values;
  range_ = prepare(group.c_str());
  for (int i = 1; i < kRangeGroup; ++i) group += "," + range_values;
  range_group_ = prepare(group.c_str());
  alloc_ = prepare(
      "INSERT INTO allocation_rows (run, addr, bytes, device, stream, thread, api, alloc_ns,"
      " free_ns, range, step, kind, id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
  batch_insert_ = prepare(
      "INSERT INTO allocation_batches (run, first_id, last_id, count, base_ns, rows)"
      " VALUES (?,?,?,?,?,?)");
  beginBatch(batch_);
  begin_ = prepare("BEGIN IMMEDIATE");
  commit_ = prepare("COMMIT");
  set_free_ = prepare("UPDATE allocation_rows SET free_ns=? WHERE run=? AND alloc_ns=? AND id=?");
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
      flushRanges();
      flushAllocations();
    } catch (const StoreError&) {
      // A destructor cannot report it; what was written before is committed below.
    }
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  for (sqlite3_stmt* st : {range_, range_group_, alloc_, batch_insert_, set_free_, step_, scalar_, kernel_, begin_, commit_})
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
  st = prepare("SELECT coalesce(max(id), 0) FROM ranges WHERE run=?1");
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
  flushRanges();
  flushAllocations();
  in_tx_ = false;
  stepTransaction(commit_, "(committing)");
}

void RunWriter::stepTransaction(sqlite3_stmt* st, const char* what) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  // Another process past our busy timeout is named as such, as exec() does.
  if (rc != SQLITE_DONE) throw StoreError(sqliteProblem(db_, path_, what));
}

namespace {

constexpr int kRangeFields = 14;

// Binds one range row (its id and parent already as stored) at parameters
// first .. first + 13. The name must outlive the statement's next reset.
void bindRange(sqlite3_stmt* st, int first, int64_t run, const Range& r) {
  bindValues(st, first, run, r.id);
  sqlite3_bind_text(st, first + 2, r.name.data(), static_cast<int>(r.name.size()), SQLITE_STATIC);
  bindValues(st, first + 3, static_cast<int>(r.domain), static_cast<int>(r.phase), r.thread, r.depth, r.parent,
             r.start, r.end, r.step, r.device_ns, r.input_bytes, r.output_bytes);
}

}  // namespace

void RunWriter::add(const Range& r) {
  begin();
  Range& row = ranges_[range_count_++];
  row = r;  // the slot's name keeps its capacity: no allocation once warm
  // Names come from the job (NVTX, the C API): bytes, not always UTF-8.
  if (!isValidUtf8(row.name)) row.name = validUtf8(row.name);
  row.id = rangeRow(r.id);
  row.parent = rangeRow(r.parent);
  if (range_count_ < kRangeGroup) return;
  for (int i = 0; i < kRangeGroup; ++i) bindRange(range_group_, 1 + i * kRangeFields, run_, ranges_[i]);
  range_count_ = 0;  // not retried: the writer stops recording after a failed write
  done(range_group_);
}

void RunWriter::flushRanges() {
  const int n = range_count_;
  range_count_ = 0;
  for (int i = 0; i < n; ++i) {
    bindRange(range_, 1, run_, ranges_[i]);
    done(range_);
  }
}

namespace {

// Binds one allocation row at parameters first .. first + 12.
void bindAllocation(sqlite3_stmt* st, int first, int64_t run, const Allocation& a) {
  bindValues(st, first, run, static_cast<int64_t>(a.addr), a.bytes, static_cast<int>(a.device), a.stream, a.thread,
             static_cast<int>(a.api), a.alloc, a.free, a.range, a.step, static_cast<int>(a.kind), a.id);
}

}  // namespace

void RunWriter::add(const Allocation& a) {
  begin();
  Allocation numbered = a;
  numbered.id = next_id_++;  // numbered in the order of the calls
  numbered.range = rangeRow(a.range);
  if (batch_rows_ == 0) batch_base_ = BatchBase{numbered.id, numbered.alloc};
  if (!appendToBatch(batch_, batch_base_, numbered)) {
    // Not expressible relative to the batch (hand-made extremes): a row of its own.
    bindAllocation(alloc_, 1, run_, numbered);
    done(alloc_);
    return;
  }
  batch_last_id_ = numbered.id;
  if (++batch_rows_ >= kAllocationBatch) flushAllocations();
}

void RunWriter::flushAllocations() {
  if (batch_rows_ == 0) return;
  closeBatch(batch_);
  bindValues(batch_insert_, 1, run_, batch_base_.first_id, batch_last_id_, static_cast<int64_t>(batch_rows_),
             batch_base_.base_ns);
  // SQLITE_STATIC: the text is not touched until the statement is reset.
  sqlite3_bind_text(batch_insert_, 6, batch_.data(), static_cast<int>(batch_.size()), SQLITE_STATIC);
  batch_rows_ = 0;
  try {
    done(batch_insert_);
  } catch (...) {
    beginBatch(batch_);  // not retried: the writer stops recording after a failed write
    throw;
  }
  beginBatch(batch_);
}

int64_t RunWriter::addLive(const Allocation& a) {
  begin();
  Allocation numbered = a;
  numbered.id = next_id_++;
  numbered.range = rangeRow(a.range);
  bindAllocation(alloc_, 1, run_, numbered);
  done(alloc_);
  return numbered.id;
}

void RunWriter::setFree(const Allocation& a) {
  begin();
  bindValues(set_free_, 1, a.free, run_, a.alloc, a.id);
  done(set_free_);
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
  for (const Allocation& a : t.allocations) add(a);
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
  sqlite3_stmt* st = prepare(R"SQL(
    WITH RECURSIVE owner(kernel, range) AS (
      SELECT rowid, range FROM kernels WHERE run = ?1 AND range != 0
      UNION ALL
      SELECT owner.kernel, r.parent FROM owner JOIN ranges r ON r.run = ?1 AND r.id = owner.range
      WHERE r.parent != 0),
    total(range, ns) AS (
      SELECT owner.range, sum(k.end_ns - k.start_ns) FROM owner JOIN kernels k ON k.rowid = owner.kernel
      GROUP BY owner.range)
    UPDATE ranges SET device_ns = (SELECT ns FROM total WHERE total.range = ranges.id)
    WHERE run = ?1 AND id IN (SELECT range FROM total))SQL");
  sqlite3_bind_int64(st, 1, run_);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) throw StoreError(path_ + ": kernel attribution failed: " + sqlite3_errmsg(db_));
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

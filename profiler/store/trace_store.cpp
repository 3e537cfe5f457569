#include "trace_store.h"
#include "allocation_batch.h"
#include "allocation_order.h"
#include "run_row.h"
#include "utf8_text.h"

#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <new>

namespace gcprof {
namespace {

bool onReadOnlyMount(const std::string& path) {
  struct statvfs fs;
  return statvfs(path.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY);
}

// "file:" URI of a path: '%', '?' and '#' would be read as URI syntax.
std::string sqliteUri(const std::string& path) {
  std::string out = "file:";
  for (char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// Writing a trace creates the file and its -wal and -shm beside it: the
// folder must be writable. Said before a job starts, not as an SQLite error.
void requireWritableDir(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (access(dir.c_str(), W_OK | X_OK) == 0) return;
  int err = errno;
  if (err == ENOENT) throw StoreError(path + ": cannot write: the folder " + dir + " does not exist");
  throw StoreError(path + ": cannot write into " + dir + " (" + std::strerror(err) + ")" +
                   (err == EROFS ? "; record to a writable disk, then copy the trace" : ""));
}

std::string sqliteProblem(sqlite3* db, const std::string& path) {
  return gcprof::sqliteProblem(db, path, "is the trace damaged?");
}

// A prepared statement that finalizes itself and reports errors with the path.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
      throw StoreError(sqliteProblem(db, path));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(sqliteProblem(db_, path_));
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(st_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  int64_t i64(int c) { return sqlite3_column_int64(st_, c); }
  double f64(int c) { return sqlite3_column_double(st_, c); }
  std::string text(int c) {
    const unsigned char* t = sqlite3_column_text(st_, c);
    return t ? reinterpret_cast<const char*>(t) : "";
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* st_ = nullptr;
};

// A version 1 file opened read-only has no rank columns: their defaults stand in.
std::string runColumns(int version) {
  return std::string(
             "id, command, cwd, env, name, backend, status, exit_code, pid, rank, started_ns, ended_ns,"
             " min_bytes, small_allocs, small_bytes, dropped_events, unmatched_frees, baseline_run,"
             " plan_id, runtime, ") +
         (version >= 2 ? "local_rank, world_size, job_run" : "-1, -1, 0");
}

RunInfo readRun(Stmt& s) {
  RunInfo r;
  r.id = s.i64(0);
  r.command = s.text(1);
  r.cwd = s.text(2);
  r.env = s.text(3);
  r.name = s.text(4);
  r.backend = s.text(5);
  r.status = s.text(6);
  r.exit_code = static_cast<int>(s.i64(7));
  r.pid = s.i64(8);
  r.rank = static_cast<int>(s.i64(9));
  r.started = s.i64(10);
  r.ended = s.i64(11);
  r.min_bytes = s.i64(12);
  r.small_allocs = s.i64(13);
  r.small_bytes = s.i64(14);
  r.dropped_events = s.i64(15);
  r.unmatched_frees = s.i64(16);
  r.baseline_run = s.i64(17);
  r.plan_id = s.i64(18);
  r.runtime = s.text(19);
  r.local_rank = static_cast<int>(s.i64(20));
  r.world_size = static_cast<int>(s.i64(21));
  r.job_run = s.i64(22);
  return r;
}

}  // namespace

Ns monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Ns>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

TraceStore::TraceStore(const std::string& path, Mode mode) : path_(path) {
  if (mode == Mode::ReadOnly && access(path.c_str(), R_OK) != 0)
    throw StoreError(path + ": cannot open (no such file or not readable)");
  if (mode == Mode::ReadWrite) requireWritableDir(path);
  int flags = mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY
                                     : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // A WAL trace needs its -shm file even to be read, and none can be made on
  // a read-only mount: there nothing can change the file, so SQLite may read
  // it as immutable (no locks, no -shm).
  std::string name = path;
  if (mode == Mode::ReadOnly && onReadOnlyMount(path)) {
    name = sqliteUri(path) + "?immutable=1";
    flags |= SQLITE_OPEN_URI;
  }
  if (sqlite3_open_v2(name.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = path + ": cannot open (" + sqlite3_errmsg(db_) + ")";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg);
  }
  // Writers wait as long as the injector's writer does (run_writer.cpp): a
  // `record` starting while another job's writer commits must not give up
  // first (docs/recording.md).
  sqlite3_busy_timeout(db_, mode == Mode::ReadWrite ? kWriteWaitMs : kReadWaitMs);
  try {
    ensureSchema(db_, path, mode == Mode::ReadWrite);
    version_ = schemaVersionOf(db_, path);
    if (mode == Mode::ReadWrite) exec(db_, path, "PRAGMA journal_mode=WAL");
  } catch (...) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw;
  }
}

TraceStore::~TraceStore() { sqlite3_close(db_); }

std::vector<RunInfo> TraceStore::runs() {
  std::vector<RunInfo> out;
  Stmt s(db_, path_, ("SELECT " + runColumns(version_) + " FROM runs ORDER BY id").c_str());
  while (s.step()) out.push_back(readRun(s));
  return out;
}

RunInfo TraceStore::run(int64_t id) {
  Stmt s(db_, path_, ("SELECT " + runColumns(version_) + " FROM runs WHERE id=?").c_str());
  s.bind(1, id);
  if (!s.step()) throw StoreError(path_ + ": no run " + std::to_string(id));
  return readRun(s);
}

int64_t TraceStore::lastRun() {
  Stmt s(db_, path_, "SELECT max(id) FROM runs WHERE baseline_run = 0");
  int64_t id = s.step() ? s.i64(0) : 0;
  if (id == 0) return 0;
  // A rank's run stands for its whole job: the launcher's.
  RunInfo newest = run(id);
  return newest.rank >= 0 && newest.job_run > 0 ? newest.job_run : id;
}

int64_t TraceStore::maxRunId() {
  Stmt s(db_, path_, "SELECT coalesce(max(id), 0) FROM runs");
  return s.step() ? s.i64(0) : 0;
}

TraceStore::StepProgress TraceStore::rerunProgress(int64_t baseline_run, int64_t after) {
  Stmt s(db_, path_,
         "SELECT count(*), coalesce(max(s.peak_bytes), 0) FROM steps s JOIN runs r ON r.id = s.run"
         " WHERE s.run > ? AND r.baseline_run = ?");
  s.bind(1, after);
  s.bind(2, baseline_run);
  StepProgress p;
  if (s.step()) {
    p.steps = s.i64(0);
    p.peak = s.i64(1);
  }
  return p;
}

Trace TraceStore::load(int64_t id, const LoadProgress& progress) {
  Trace t;
  t.run = run(id);
  // Ranges and allocations are nearly all of a big run's rows. Counted
  // first so that the vectors are allocated once: growing a vector of ten
  // million allocations by doubling held up to three times its size.
  int64_t total = 0, done = 0;
  {
    const std::string rows = std::string("SELECT count(*) FROM ") + allocationRowTable(version_) +
                             " WHERE run=?";
    std::vector<std::string> counts{"SELECT count(*) FROM ranges WHERE run=?", rows};
    if (version_ >= 4)
      counts.push_back("SELECT coalesce(sum(count), 0) FROM allocation_batches WHERE run=?");
    int64_t n[3] = {0, 0, 0};
    for (size_t i = 0; i < counts.size(); ++i) {
      Stmt c(db_, path_, counts[i].c_str());
      c.bind(1, id);
      if (c.step()) n[i] = std::max<int64_t>(0, c.i64(0));
      total += n[i];
    }
    // A damaged count must not reserve more than the file can hold (a row
    // takes more than 8 bytes of it); a wrong one only costs reallocations.
    Stmt pages(db_, path_, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
    const int64_t most = pages.step() ? std::max<int64_t>(0, pages.i64(0)) / 8 : 0;
    try {
      t.ranges.reserve(static_cast<size_t>(std::min(n[0], most)));
      t.allocations.reserve(static_cast<size_t>(std::min(n[1] + n[2], most)));
    } catch (const std::bad_alloc&) {
      // Grown as read instead.
    }
    if (progress) progress(0, total);
  }
  auto row = [&] {
    if (progress && (++done & 0xffff) == 0) progress(std::min(done, total), total);
  };
  {
    Stmt s(db_, path_,
           "SELECT id, name, domain, phase, thread, depth, parent, start_ns, end_ns, step,"
           " device_ns, input_bytes, output_bytes FROM ranges WHERE run=? ORDER BY start_ns, id");
    s.bind(1, id);
    while (s.step()) {
      Range r;
      r.id = s.i64(0);
      r.name = s.text(1);
      r.domain = static_cast<RangeDomain>(s.i64(2));
      r.phase = static_cast<Phase>(s.i64(3));
      r.thread = s.i64(4);
      r.depth = static_cast<int>(s.i64(5));
      r.parent = s.i64(6);
      r.start = s.i64(7);
      r.end = s.i64(8);
      r.step = s.i64(9);
      r.device_ns = s.i64(10);
      r.input_bytes = s.i64(11);
      r.output_bytes = s.i64(12);
      t.ranges.push_back(std::move(r));
      row();
    }
  }
  {
    // From version 3 the table is clustered by (run, alloc_ns, id): this is
    // a walk along its primary key, no sort.
    const std::string number = allocationIdColumn(version_);
    Stmt s(db_, path_,
           ("SELECT " + number + ", addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range,"
            " step, kind FROM " + allocationRowTable(version_) + " WHERE run=? ORDER BY alloc_ns, " +
            number).c_str());
    s.bind(1, id);
    while (s.step()) {
      Allocation a;
      a.id = s.i64(0);
      if (!setNarrowFields(a, s.i64(9), s.i64(10), s.i64(3), s.i64(6), s.i64(11)))
        throw StoreError(path_ + ": run " + std::to_string(id) + ": allocation " + std::to_string(a.id) +
                         " is damaged (a range, step, device, api or kind out of range)");
      a.addr = static_cast<uint64_t>(s.i64(1));
      a.bytes = s.i64(2);
      a.stream = s.i64(4);
      a.thread = s.i64(5);
      a.alloc = s.i64(7);
      a.free = s.i64(8);
      t.allocations.push_back(a);
      row();
    }
  }
  if (version_ >= 4) {
    // Version 4: most rows are in batches (allocation_batch.h), in the order
    // the recorder wrote them (at their free): put all in (alloc_ns, id) order.
    Stmt s(db_, path_,
           "SELECT first_id, base_ns, rows FROM allocation_batches WHERE run=? ORDER BY first_id");
    s.bind(1, id);
    size_t before = t.allocations.size();
    std::string problem;
    while (s.step()) {
      size_t from = t.allocations.size();
      if (!parseBatch(s.text(2), BatchBase{s.i64(0), s.i64(1)}, t.allocations, problem))
        throw StoreError(path_ + ": run " + std::to_string(id) + ": the allocation batch from id " +
                         std::to_string(s.i64(0)) + " is damaged (" + problem + ")");
      for (size_t i = from; i < t.allocations.size(); ++i) row();
    }
    if (t.allocations.size() > before)
      sortByAllocation(t.allocations);
  }
  {
    Stmt s(db_, path_,
           "SELECT step, start_ns, end_ns, peak_bytes FROM steps WHERE run=? ORDER BY step");
    s.bind(1, id);
    while (s.step()) t.steps.push_back({s.i64(0), s.i64(1), s.i64(2), s.i64(3)});
  }
  {
    Stmt s(db_, path_, "SELECT step, name, value FROM scalars WHERE run=? ORDER BY step, rowid");
    s.bind(1, id);
    while (s.step()) t.scalars.push_back({s.i64(0), s.text(1), s.f64(2)});
  }
  {
    Stmt s(db_, path_,
           "SELECT rowid, name, device, stream, start_ns, end_ns, correlation, range"
           " FROM kernels WHERE run=? ORDER BY start_ns");
    s.bind(1, id);
    while (s.step()) {
      Kernel k;
      k.id = s.i64(0);
      k.name = s.text(1);
      k.device = static_cast<int>(s.i64(2));
      k.stream = s.i64(3);
      k.start = s.i64(4);
      k.end = s.i64(5);
      k.correlation = s.i64(6);
      k.range = s.i64(7);
      t.kernels.push_back(std::move(k));
    }
  }
  if (progress) progress(total, total);
  return t;
}

int64_t TraceStore::createRun(const RunInfo& r) { return insertRun(db_, path_, r); }

void TraceStore::updateRun(const RunInfo& r) {
  Stmt s(db_, path_,
         "UPDATE runs SET status=?, exit_code=?, ended_ns=?, baseline_run=?, plan_id=?, name=?,"
         " pid=? WHERE id=?");
  s.bind(1, r.status);
  s.bind(2, r.exit_code);
  s.bind(3, r.ended);
  s.bind(4, r.baseline_run);
  s.bind(5, r.plan_id);
  s.bind(6, r.name);
  s.bind(7, r.pid);
  s.bind(8, r.id);
  s.step();
}

int64_t TraceStore::savePlan(const PlanRecord& p) {
  Stmt s(db_, path_,
         "INSERT INTO plans (run, created_ns, strategy, budget_bytes, json) VALUES (?,?,?,?,?)");
  s.bind(1, p.run);
  s.bind(2, p.created);
  s.bind(3, p.strategy);
  s.bind(4, p.budget);
  s.bind(5, p.json);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

std::vector<PlanRecord> TraceStore::plans() {
  std::vector<PlanRecord> out;
  Stmt s(db_, path_, "SELECT id, run, created_ns, strategy, budget_bytes, json FROM plans ORDER BY id");
  while (s.step()) out.push_back({s.i64(0), s.i64(1), s.i64(2), s.text(3), s.i64(4), s.text(5)});
  return out;
}

int64_t TraceStore::saveVerification(const VerificationRecord& v) {
  Stmt s(db_, path_,
         "INSERT INTO verifications (plan, baseline_run, run, verdict, created_ns, json)"
         " VALUES (?,?,?,?,?,?)");
  s.bind(1, v.plan);
  s.bind(2, v.baseline_run);
  s.bind(3, v.run);
  s.bind(4, v.verdict);
  s.bind(5, v.created);
  s.bind(6, v.json);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

std::vector<VerificationRecord> TraceStore::verifications() {
  std::vector<VerificationRecord> out;
  Stmt s(db_, path_,
         "SELECT id, plan, baseline_run, run, verdict, created_ns, json FROM verifications"
         " ORDER BY id");
  while (s.step())
    out.push_back({s.i64(0), s.i64(1), s.i64(2), s.i64(3), s.text(4), s.i64(5), s.text(6)});
  return out;
}

}  // namespace gcprof

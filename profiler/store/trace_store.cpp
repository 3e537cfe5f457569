#include "trace_store.h"
#include "utf8_text.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace gcprof {
namespace {

// What an SQLite error means for the user: a lock held by another gcprof is
// not damage.
std::string sqliteProblem(sqlite3* db, const std::string& path) {
  int rc = sqlite3_errcode(db);
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
    return path + ": locked by another process for longer than 10 s (a `gcprof record` or "
                  "`verify` writing into it?); try again when it finishes";
  return path + ": " + sqlite3_errmsg(db) + " (damaged trace?)";
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
  int flags = mode == Mode::ReadOnly ? SQLITE_OPEN_READONLY
                                     : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = path + ": cannot open (" + sqlite3_errmsg(db_) + ")";
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg);
  }
  sqlite3_busy_timeout(db_, 10000);
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

Trace TraceStore::load(int64_t id) {
  Trace t;
  t.run = run(id);
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
    }
  }
  {
    Stmt s(db_, path_,
           "SELECT rowid, addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range,"
           " step, kind FROM allocations WHERE run=? ORDER BY alloc_ns, rowid");
    s.bind(1, id);
    while (s.step()) {
      Allocation a;
      a.id = s.i64(0);
      a.addr = static_cast<uint64_t>(s.i64(1));
      a.bytes = s.i64(2);
      a.device = static_cast<int>(s.i64(3));
      a.stream = s.i64(4);
      a.thread = s.i64(5);
      a.api = static_cast<int>(s.i64(6));
      a.alloc = s.i64(7);
      a.free = s.i64(8);
      a.range = s.i64(9);
      a.step = s.i64(10);
      a.kind = static_cast<int>(s.i64(11));
      t.allocations.push_back(a);
    }
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
  return t;
}

int64_t TraceStore::createRun(const RunInfo& r) {
  Stmt s(db_, path_,
         "INSERT INTO runs (command, cwd, env, name, backend, status, pid, rank, started_ns,"
         " min_bytes, baseline_run, plan_id, local_rank, world_size, job_run)"
         " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, r.command);
  s.bind(2, validUtf8(r.cwd));
  s.bind(3, r.env);
  s.bind(4, validUtf8(r.name));
  s.bind(5, r.backend.empty() ? std::string("host") : r.backend);
  s.bind(6, r.status.empty() ? std::string("running") : r.status);
  s.bind(7, r.pid);
  s.bind(8, r.rank);
  s.bind(9, r.started);
  s.bind(10, r.min_bytes);
  s.bind(11, r.baseline_run);
  s.bind(12, r.plan_id);
  s.bind(13, r.local_rank);
  s.bind(14, r.world_size);
  s.bind(15, r.job_run);
  s.step();
  return sqlite3_last_insert_rowid(db_);
}

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

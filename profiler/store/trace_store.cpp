#include "trace_store.h"

#include "file_kind.h"
#include "run_row.h"
#include "statement.h"
#include "trace_load.h"
#include "utf8_text.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>


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

// A trace is a regular file: SQLite gave a directory or a device its bare
// "disk I/O error" (file_kind.h). A missing path is said below (or created,
// to write).
void requireRegularFile(const std::string& path) {
  const char* what = irregularFileKind(path);
  if (!what) return;
  throw StoreError(path + ": is " + what + ", not a trace file; give the path of a trace (a file that " +
                   "`gcprof record -o FILE` writes)");
}

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
  s.columns(r.id, r.command, r.cwd, r.env, r.name, r.backend, r.status, r.exit_code, r.pid, r.rank, r.started,
            r.ended, r.min_bytes, r.small_allocs, r.small_bytes, r.dropped_events, r.unmatched_frees,
            r.baseline_run, r.plan_id, r.runtime, r.local_rank, r.world_size, r.job_run);
  return r;
}

}  // namespace

Ns monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Ns>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

TraceStore::TraceStore(const std::string& path, Mode mode) : path_(path) {
  requireRegularFile(path);
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
  if (newest.rank >= 0 && newest.job_run > 0) return newest.job_run;
  if (version_ < 2) return id;  // no job_run column: runs are not linked into jobs
  int64_t root = newest.job_run > 0 ? newest.job_run : id;
  Stmt ranked(db_, path_, "SELECT 1 FROM runs WHERE job_run = ? AND rank >= 0 AND baseline_run = 0 LIMIT 1");
  ranked.bind(1, root);
  if (ranked.step()) return root;  // another process of a distributed job: the job
  // Otherwise the job's process that trained, whichever ran last: a job that
  // prepares its data in a subprocess, or a worker process that called a
  // module, made newer runs than its training process's.
  return trainingRun(root, 0);
}

int64_t TraceStore::trainingRun(int64_t job_root, int64_t baseline_run) {
  Stmt s(db_, path_,
         "SELECT r.id FROM runs r WHERE (r.id = ?1 OR r.job_run = ?1) AND r.baseline_run = ?2"
         " ORDER BY (SELECT count(*) FROM steps s WHERE s.run = r.id) DESC, r.id DESC LIMIT 1");
  s.bind(1, job_root);
  s.bind(2, baseline_run);
  return s.step() ? s.i64(0) : job_root;
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
  return loadTrace(db_, path_, version_, run(id), progress);
}

Trace TraceStore::loadWithoutAllocations(int64_t id) { return loadTrace(db_, path_, version_, run(id), {}, false); }

int64_t TraceStore::createRun(const RunInfo& r) { return insertRun(db_, path_, r); }

void TraceStore::updateRun(const RunInfo& r) {
  Stmt s(db_, path_,
         "UPDATE runs SET status=?, exit_code=?, ended_ns=?, baseline_run=?, plan_id=?, name=?,"
         " pid=? WHERE id=?");
  s.bindAll(r.status, r.exit_code, r.ended, r.baseline_run, r.plan_id, r.name, r.pid, r.id);
  s.step();
}

int64_t TraceStore::savePlan(const PlanRecord& p) {
  Stmt s(db_, path_,
         "INSERT INTO plans (run, created_ns, strategy, budget_bytes, json) VALUES (?,?,?,?,?)");
  s.bindAll(p.run, p.created, p.strategy, p.budget, p.json);
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
  s.bindAll(v.plan, v.baseline_run, v.run, v.verdict, v.created, v.json);
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

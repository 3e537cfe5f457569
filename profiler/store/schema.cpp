#include "schema.h"

#include <sys/statvfs.h>

namespace gcprof {
namespace {

// Version 1, the tables as first written; kMigrateTo2 adds what version 2
// has. `ranges` has no index on start_ns: the loader reads a run's ranges
// whole and sorts them itself, and the index cost the recorder a second
// B-tree insert per range (files that have one keep it; nothing needs it). A new file is made with both, so that there is one path to each
// version. docs/schema.md documents every column; keep the two in step.
const char* kCreateV1 = R"SQL(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  command TEXT NOT NULL DEFAULT '[]',
  cwd TEXT NOT NULL DEFAULT '',
  env TEXT NOT NULL DEFAULT '{}',
  name TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT 'host',
  runtime TEXT NOT NULL DEFAULT 'native',
  status TEXT NOT NULL DEFAULT 'running',
  exit_code INTEGER NOT NULL DEFAULT 0,
  pid INTEGER NOT NULL DEFAULT 0,
  rank INTEGER NOT NULL DEFAULT -1,
  started_ns INTEGER NOT NULL DEFAULT 0,
  ended_ns INTEGER NOT NULL DEFAULT 0,
  min_bytes INTEGER NOT NULL DEFAULT 0,
  small_allocs INTEGER NOT NULL DEFAULT 0,
  small_bytes INTEGER NOT NULL DEFAULT 0,
  dropped_events INTEGER NOT NULL DEFAULT 0,
  unmatched_frees INTEGER NOT NULL DEFAULT 0,
  baseline_run INTEGER NOT NULL DEFAULT 0,
  plan_id INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ranges (
  run INTEGER NOT NULL,
  id INTEGER NOT NULL,
  name TEXT NOT NULL,
  domain INTEGER NOT NULL,
  phase INTEGER NOT NULL,
  thread INTEGER NOT NULL,
  depth INTEGER NOT NULL,
  parent INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  step INTEGER NOT NULL,
  device_ns INTEGER NOT NULL DEFAULT -1,
  input_bytes INTEGER NOT NULL DEFAULT 0,
  output_bytes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS allocations (
  run INTEGER NOT NULL,
  addr INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  thread INTEGER NOT NULL,
  api INTEGER NOT NULL,
  alloc_ns INTEGER NOT NULL,
  free_ns INTEGER NOT NULL,
  range INTEGER NOT NULL,
  step INTEGER NOT NULL,
  kind INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS allocations_time ON allocations (run, alloc_ns);
CREATE TABLE IF NOT EXISTS steps (
  run INTEGER NOT NULL,
  step INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  peak_bytes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run, step)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS scalars (
  run INTEGER NOT NULL,
  step INTEGER NOT NULL,
  name TEXT NOT NULL,
  value REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS scalars_run ON scalars (run, step);
CREATE TABLE IF NOT EXISTS kernels (
  run INTEGER NOT NULL,
  name TEXT NOT NULL,
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  correlation INTEGER NOT NULL,
  range INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS kernels_time ON kernels (run, start_ns);
CREATE TABLE IF NOT EXISTS plans (
  id INTEGER PRIMARY KEY,
  run INTEGER NOT NULL,
  created_ns INTEGER NOT NULL,
  strategy TEXT NOT NULL,
  budget_bytes INTEGER NOT NULL,
  json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS verifications (
  id INTEGER PRIMARY KEY,
  plan INTEGER NOT NULL,
  baseline_run INTEGER NOT NULL,
  run INTEGER NOT NULL,
  verdict TEXT NOT NULL,
  created_ns INTEGER NOT NULL,
  json TEXT NOT NULL
);
INSERT OR IGNORE INTO meta (key, value) VALUES ('application', 'gcprof');
)SQL";

// Version 2: the ranks of a multi-process job (torchrun, DDP, FSDP) and the
// launcher run they belong to (docs/distributed.md).
const char* kMigrateTo2 = R"SQL(
ALTER TABLE runs ADD COLUMN local_rank INTEGER NOT NULL DEFAULT -1;
ALTER TABLE runs ADD COLUMN world_size INTEGER NOT NULL DEFAULT -1;
ALTER TABLE runs ADD COLUMN job_run INTEGER NOT NULL DEFAULT 0;
PRAGMA user_version = 2;
)SQL";

// Version 3: allocations clustered by (run, alloc_ns), the order every reader
// asks for, instead of a rowid table plus a (run, alloc_ns) index: one B-tree
// insert per recorded block instead of two (an allocation storm
// spent over half of the writer in SQLite). Without a rowid a block needs a
// number of its own: `id`, unique within its run, in the order the writer
// wrote the rows (old rows keep their rowid as id, so ties on alloc_ns keep
// their order).
const char* kMigrateTo3 = R"SQL(
CREATE TABLE allocations_v3 (
  run INTEGER NOT NULL,
  addr INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  thread INTEGER NOT NULL,
  api INTEGER NOT NULL,
  alloc_ns INTEGER NOT NULL,
  free_ns INTEGER NOT NULL,
  range INTEGER NOT NULL,
  step INTEGER NOT NULL,
  kind INTEGER NOT NULL,
  id INTEGER NOT NULL,
  PRIMARY KEY (run, alloc_ns, id)
) WITHOUT ROWID;
INSERT INTO allocations_v3 (run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns,
                            range, step, kind, id)
  SELECT run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range, step, kind, rowid
  FROM allocations;
DROP TABLE allocations;
ALTER TABLE allocations_v3 RENAME TO allocations;
PRAGMA user_version = 3;
)SQL";

// Version 4: the recorder writes allocations many to a row of
// `allocation_batches` (allocation_batch.h): the per-row SQLite work was most
// of an allocation storm's cost (bench/history/recording-overhead.md). The version 3
// table keeps the rows written one by one (blocks still live when written,
// whose free_ns is set later; rows copied by `merge`) as `allocation_rows`,
// and the view `allocations` shows both as before, one row per allocation,
// for any SQL reader (gcprof's loader reads the two tables itself).
const char* kMigrateTo4 = R"SQL(
ALTER TABLE allocations RENAME TO allocation_rows;
CREATE TABLE allocation_batches (
  run INTEGER NOT NULL,
  first_id INTEGER NOT NULL,
  last_id INTEGER NOT NULL,
  count INTEGER NOT NULL,
  base_ns INTEGER NOT NULL,
  rows TEXT NOT NULL
);
CREATE INDEX allocation_batches_run ON allocation_batches (run, first_id);
CREATE VIEW allocations (run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range,
                         step, kind, id) AS
  SELECT run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range, step, kind, id
  FROM allocation_rows
  UNION ALL
  SELECT b.run, json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
         json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]'),
         json_extract(j.value, '$[5]'), json_extract(j.value, '$[6]'),
         b.base_ns + json_extract(j.value, '$[7]'),
         CASE WHEN json_extract(j.value, '$[8]') < 0 THEN -1
              ELSE b.base_ns + json_extract(j.value, '$[7]') + json_extract(j.value, '$[8]') END,
         json_extract(j.value, '$[9]'), json_extract(j.value, '$[10]'),
         json_extract(j.value, '$[11]'), b.first_id + json_extract(j.value, '$[0]')
  FROM allocation_batches b, json_each(b.rows) j;
PRAGMA user_version = 4;
)SQL";

// Version 5: the recorder writes ranges many to a row of `range_batches`
// (range_batch.h), as version 4 does allocations: one row per range was a
// third of the writer thread of a short-step job (bench/RESULTS.md, "Cost
// per module call"). The old table keeps the rows written one by one (rows
// copied by `merge`, hand-made extremes) as `range_rows`. A batch is not
// updated once written, so the kernel time of a range (attributeKernelTime)
// is kept in `range_device_time`, which overrides the row's device_ns. The
// view `ranges` shows all of it as before, one row per range, for any SQL
// reader (gcprof's loader reads the tables itself).
const char* kMigrateTo5 = R"SQL(
ALTER TABLE ranges RENAME TO range_rows;
CREATE TABLE range_batches (
  run INTEGER NOT NULL,
  first_id INTEGER NOT NULL,
  last_id INTEGER NOT NULL,
  count INTEGER NOT NULL,
  base_ns INTEGER NOT NULL,
  rows TEXT NOT NULL
);
CREATE INDEX range_batches_run ON range_batches (run, first_id);
CREATE TABLE range_device_time (
  run INTEGER NOT NULL,
  id INTEGER NOT NULL,
  device_ns INTEGER NOT NULL,
  PRIMARY KEY (run, id)
) WITHOUT ROWID;
CREATE VIEW ranges (run, id, name, domain, phase, thread, depth, parent, start_ns, end_ns, step,
                    device_ns, input_bytes, output_bytes) AS
  SELECT x.run, x.id, x.name, x.domain, x.phase, x.thread, x.depth, x.parent, x.start_ns, x.end_ns,
         x.step, coalesce(t.device_ns, x.device_ns), x.input_bytes, x.output_bytes
  FROM (SELECT run, id, name, domain, phase, thread, depth, parent, start_ns, end_ns, step,
               device_ns, input_bytes, output_bytes
        FROM range_rows
        UNION ALL
        SELECT b.run, b.first_id + json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'),
               json_extract(j.value, '$[2]'), json_extract(j.value, '$[3]'),
               json_extract(j.value, '$[4]'), json_extract(j.value, '$[5]'),
               json_extract(j.value, '$[6]'), b.base_ns + json_extract(j.value, '$[7]'),
               b.base_ns + json_extract(j.value, '$[7]') + json_extract(j.value, '$[8]'),
               json_extract(j.value, '$[9]'), json_extract(j.value, '$[10]'),
               json_extract(j.value, '$[11]'), json_extract(j.value, '$[12]')
        FROM range_batches b, json_each(b.rows) j) x
  LEFT JOIN range_device_time t ON t.run = x.run AND t.id = x.id;
PRAGMA user_version = 5;
)SQL";

// Version 6: a block written while live (free_ns -1) goes to a batch like
// any row, and its free to `allocation_frees` (allocation_frees.h), instead
// of a row of its own in allocation_rows and an UPDATE of it: a job whose
// steps outlast the 50 ms after which a live block is written paid both for
// most of its blocks (bench/RESULTS.md, "Cost per module call"). The view
// `allocations` shows the rows as before, a live row with the free time
// found there (its key is the row's: no sort, no scan).
const char* kMigrateTo6 = R"SQL(
CREATE TABLE allocation_frees (
  run INTEGER NOT NULL,
  alloc_ns INTEGER NOT NULL,
  id INTEGER NOT NULL,
  free_ns INTEGER NOT NULL,
  PRIMARY KEY (run, alloc_ns, id)
) WITHOUT ROWID;
DROP VIEW allocations;
CREATE VIEW allocations (run, addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range,
                         step, kind, id) AS
  SELECT run, addr, bytes, device, stream, thread, api, alloc_ns,
         CASE WHEN free_ns = -1
              THEN coalesce((SELECT f.free_ns FROM allocation_frees f
                             WHERE f.run = r.run AND f.alloc_ns = r.alloc_ns AND f.id = r.id), -1)
              ELSE free_ns END,
         range, step, kind, id
  FROM allocation_rows r
  UNION ALL
  SELECT b.run, json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
         json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]'),
         json_extract(j.value, '$[5]'), json_extract(j.value, '$[6]'),
         b.base_ns + json_extract(j.value, '$[7]'),
         CASE WHEN json_extract(j.value, '$[8]') < 0
              THEN coalesce((SELECT f.free_ns FROM allocation_frees f
                             WHERE f.run = b.run AND f.alloc_ns = b.base_ns + json_extract(j.value, '$[7]')
                               AND f.id = b.first_id + json_extract(j.value, '$[0]')), -1)
              ELSE b.base_ns + json_extract(j.value, '$[7]') + json_extract(j.value, '$[8]') END,
         json_extract(j.value, '$[9]'), json_extract(j.value, '$[10]'),
         json_extract(j.value, '$[11]'), b.first_id + json_extract(j.value, '$[0]')
  FROM allocation_batches b, json_each(b.rows) j;
PRAGMA user_version = 6;
)SQL";

// Version 7: each allocation batch's earliest alloc_ns, in a table of its
// own. A batch is written at its rows' frees, so its base_ns is not its
// earliest row, and a reader that hands the run over in time order without
// loading it (allocation_stream.h: show, export) parsed every batch once
// only to learn where it starts: a fifth of `show` at ten million rows. Not
// a column of allocation_batches: a column added after `rows` is read by
// walking each ~90 KiB text's overflow pages. A batch without a row here
// (written before version 7) is still parsed for it.
const char* kMigrateTo7 = R"SQL(
CREATE TABLE allocation_batch_starts (
  run INTEGER NOT NULL,
  first_id INTEGER NOT NULL,
  alloc_ns INTEGER NOT NULL,
  PRIMARY KEY (run, first_id)
) WITHOUT ROWID;
PRAGMA user_version = 7;
)SQL";

int userVersion(sqlite3* db, const std::string& path) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr) != SQLITE_OK)
    throw StoreError(sqliteProblem(db, path, "not a readable SQLite file; is this a gcprof trace?"));
  int rc = sqlite3_step(st);
  int v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
  if (rc != SQLITE_ROW) {
    std::string why = sqliteProblem(db, path, "not a readable SQLite file; is this a gcprof trace?");
    sqlite3_finalize(st);
    throw StoreError(why);
  }
  sqlite3_finalize(st);
  return v;
}

bool tableCount(sqlite3* db, int* n) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &st, nullptr) != SQLITE_OK)
    return false;
  bool ok = sqlite3_step(st) == SQLITE_ROW;
  if (ok) *n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return ok;
}

bool isGcprofFile(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='application'", -1, &st,
                         nullptr) != SQLITE_OK)
    return false;
  // A foreign file may hold NULL here despite NOT NULL in our schema.
  const unsigned char* value = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_text(st, 0) : nullptr;
  bool ok = value && std::string(reinterpret_cast<const char*>(value)) == "gcprof";
  sqlite3_finalize(st);
  return ok;
}

}  // namespace

namespace {

// SQLite says SQLITE_FULL when a write finds no room, but "disk I/O error"
// when the disk was full before it opened the file (no room for its -shm).
bool diskFull(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct statvfs fs;
  return statvfs(dir.c_str(), &fs) == 0 && static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < (64u << 10);
}

}  // namespace

std::string sqliteProblem(sqlite3* db, const std::string& path, const std::string& otherwise) {
  int rc = sqlite3_errcode(db);
  if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
    return path + ": locked by another process past our wait (a `gcprof record` or `verify` "
                  "writing into it, or a program holding it open exclusively?); try again "
                  "when it finishes";
  if (rc == SQLITE_FULL || (rc == SQLITE_IOERR && diskFull(path)))
    return path + ": the disk is full (" + sqlite3_errmsg(db) + "); free some space and run again";
  if (rc == SQLITE_CORRUPT)
    return path + ": damaged or cut short (SQLite: " + sqlite3_errmsg(db) +
           "); copy the whole trace again, or record again";
  return path + ": " + sqlite3_errmsg(db) + "; " + otherwise;
}

void exec(sqlite3* db, const std::string& path, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    int rc = sqlite3_errcode(db);
    std::string msg = rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? sqliteProblem(db, path, "")
                                                               : path + ": " + (err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    throw StoreError(msg);
  }
}

void ensureSchema(sqlite3* db, const std::string& path, bool writable) {
  int version = userVersion(db, path);
  int tables = 0;
  if (!tableCount(db, &tables)) {
    throw StoreError(path + ": damaged or not an SQLite database (" +
                     std::string(sqlite3_errmsg(db)) + ")");
  }
  if (version == 0 && tables == 0) {
    if (!writable) throw StoreError(path + ": empty file, not a gcprof trace");
    exec(db, path, "BEGIN IMMEDIATE");
    // Another process (a second rank) may have created it meanwhile.
    if (userVersion(db, path) == 0) {
      exec(db, path, kCreateV1);
      exec(db, path, kMigrateTo2);
      exec(db, path, kMigrateTo3);
      exec(db, path, kMigrateTo4);
      exec(db, path, kMigrateTo5);
      exec(db, path, kMigrateTo6);
      exec(db, path, kMigrateTo7);
    }
    exec(db, path, "COMMIT");
    return;
  }
  if (!isGcprofFile(db)) {
    throw StoreError(path + ": an SQLite file, but not a gcprof trace (no gcprof meta table)");
  }
  if (version > kSchemaVersion) {
    throw StoreError(path + ": schema version " + std::to_string(version) +
                     " is newer than this gcprof (" + std::to_string(kSchemaVersion) +
                     "); upgrade gcprof");
  }
  if (version < 1) {
    throw StoreError(path + ": gcprof trace without a schema version; damaged?");
  }
  // Older versions are upgraded one step at a time, only when writing: a
  // reader of an old file sees the missing columns' defaults instead.
  if (version < kSchemaVersion && writable) {
    exec(db, path, "BEGIN IMMEDIATE");
    int now = userVersion(db, path);  // another rank may have done it
    if (now < 2) exec(db, path, kMigrateTo2);
    if (now < 3) exec(db, path, kMigrateTo3);
    if (now < 4) exec(db, path, kMigrateTo4);
    if (now < 5) exec(db, path, kMigrateTo5);
    if (now < 6) exec(db, path, kMigrateTo6);
    if (now < 7) exec(db, path, kMigrateTo7);
    exec(db, path, "COMMIT");
  }
}

int schemaVersionOf(sqlite3* db, const std::string& path) { return userVersion(db, path); }

}  // namespace gcprof

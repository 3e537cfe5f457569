#include "run_row.h"

#include <memory>

#include "schema.h"
#include "utf8_text.h"

namespace gcprof {

int64_t insertRun(sqlite3* db, const std::string& path, const RunInfo& r) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO runs (command, cwd, env, name, backend, status, pid, rank,"
                         " started_ns, min_bytes, baseline_run, plan_id, local_rank, world_size,"
                         " job_run) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                         -1, &raw, nullptr) != SQLITE_OK)
    throw StoreError(sqliteProblem(db, path, "(cannot create a run)"));
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> st(raw, sqlite3_finalize);
  auto text = [&](int i, const std::string& v) {
    sqlite3_bind_text(raw, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  };
  text(1, r.command);
  text(2, validUtf8(r.cwd));
  text(3, r.env);
  text(4, validUtf8(r.name));
  text(5, r.backend.empty() ? std::string("host") : r.backend);
  text(6, r.status.empty() ? std::string("running") : r.status);
  sqlite3_bind_int64(raw, 7, r.pid);
  sqlite3_bind_int64(raw, 8, r.rank);
  sqlite3_bind_int64(raw, 9, r.started);
  sqlite3_bind_int64(raw, 10, r.min_bytes);
  sqlite3_bind_int64(raw, 11, r.baseline_run);
  sqlite3_bind_int64(raw, 12, r.plan_id);
  sqlite3_bind_int64(raw, 13, r.local_rank);
  sqlite3_bind_int64(raw, 14, r.world_size);
  sqlite3_bind_int64(raw, 15, r.job_run);
  if (sqlite3_step(raw) != SQLITE_DONE)
    throw StoreError(sqliteProblem(db, path, "(cannot create a run)"));
  return sqlite3_last_insert_rowid(db);
}

}  // namespace gcprof

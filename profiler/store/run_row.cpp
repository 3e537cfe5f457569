#include "run_row.h"

#include <memory>

#include "bind_values.h"
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
  bindValues(raw, 1, r.command, validUtf8(r.cwd), r.env, validUtf8(r.name),
             r.backend.empty() ? std::string("host") : r.backend,
             r.status.empty() ? std::string("running") : r.status, r.pid, static_cast<int64_t>(r.rank), r.started,
             r.min_bytes, r.baseline_run, r.plan_id, static_cast<int64_t>(r.local_rank),
             static_cast<int64_t>(r.world_size), r.job_run);
  if (sqlite3_step(raw) != SQLITE_DONE)
    throw StoreError(sqliteProblem(db, path, "(cannot create a run)"));
  return sqlite3_last_insert_rowid(db);
}

}  // namespace gcprof

#include "trace_merge.h"

#include <unistd.h>

#include <cstdio>

#include "job.h"
#include "trace_store.h"

namespace gcprof {
namespace {

int64_t scalar(sqlite3* db, const std::string& path, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    throw StoreError(path + ": " + sqlite3_errmsg(db));
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  return v;
}

// The newest recorded (not verification) job of a file that has ranks.
int64_t jobLauncher(const std::string& path) {
  TraceStore in(path, TraceStore::Mode::ReadOnly);
  int64_t newest = in.lastRun();
  if (newest > 0) {
    Job job = jobOf(in, newest);
    if (job.distributed()) return job.launcher.id;
  }
  throw StoreError(path + ": holds no distributed job (no run with a RANK under a launcher); record "
                   "each node with `gcprof record -o nodeN.db -- torchrun --nnodes=... ...`");
}

std::string shifted(const char* column, int64_t by) {
  return std::string("CASE ") + column + " WHEN 0 THEN 0 ELSE " + column + " + " +
         std::to_string(by) + " END";
}

void copyFile(TraceStore& out, const std::string& path, int version, int64_t runs, int64_t plans,
              int64_t verifications) {
  sqlite3* db = out.handle();
  const std::string& o = out.path();
  std::string r = std::to_string(runs), p = std::to_string(plans), v = std::to_string(verifications);
  std::string rank_cols = version >= 2 ? "local_rank, world_size, " + shifted("job_run", runs)
                                       : std::string("-1, -1, 0");
  // Batches (versions 4 and 5) are copied as they are: their text holds no run.
  std::string batches =
      version >= 4 ? "INSERT INTO allocation_batches (run, first_id, last_id, count, base_ns, rows)"
                         " SELECT run + " + r + ", first_id, last_id, count, base_ns, rows"
                         " FROM src.allocation_batches;"
                   : std::string();
  if (version >= 6)
    batches += "INSERT INTO allocation_frees SELECT run + " + r + ", alloc_ns, id, free_ns FROM src.allocation_frees;";
  if (version >= 7)
    batches += "INSERT INTO allocation_batch_starts SELECT run + " + r + ", first_id, alloc_ns"
               " FROM src.allocation_batch_starts;";
  std::string rangeBatches =
      version >= 5 ? "INSERT INTO range_batches (run, first_id, last_id, count, base_ns, rows)"
                         " SELECT run + " + r + ", first_id, last_id, count, base_ns, rows FROM src.range_batches;"
                         "INSERT INTO range_device_time SELECT run + " + r + ", id, device_ns"
                         " FROM src.range_device_time;"
                   : std::string();
  std::string sql =
      "INSERT INTO runs (id, command, cwd, env, name, backend, runtime, status, exit_code, pid,"
      " rank, started_ns, ended_ns, min_bytes, small_allocs, small_bytes, dropped_events,"
      " unmatched_frees, baseline_run, plan_id, local_rank, world_size, job_run)"
      " SELECT id + " + r + ", command, cwd, env, name, backend, runtime, status, exit_code, pid,"
      " rank, started_ns, ended_ns, min_bytes, small_allocs, small_bytes, dropped_events,"
      " unmatched_frees, " + shifted("baseline_run", runs) + ", " + shifted("plan_id", plans) + ", " +
      rank_cols + " FROM src.runs;"
      "INSERT INTO range_rows SELECT run + " + r + ", id, name, domain, phase, thread, depth, parent,"
      " start_ns, end_ns, step, device_ns, input_bytes, output_bytes FROM src." + rangeRowTable(version) + ";" +
      rangeBatches +
      "INSERT INTO allocation_rows (run, addr, bytes, device, stream, thread, api, alloc_ns,"
      " free_ns, range, step, kind, id) SELECT run + " + r + ", addr, bytes, device, stream,"
      " thread, api, alloc_ns, free_ns, range, step, kind, " + allocationIdColumn(version) +
      " FROM src." + allocationRowTable(version) + ";" + batches +
      "INSERT INTO steps SELECT run + " + r + ", step, start_ns, end_ns, peak_bytes FROM src.steps;"
      "INSERT INTO scalars SELECT run + " + r + ", step, name, value FROM src.scalars;"
      "INSERT INTO kernels SELECT run + " + r + ", name, device, stream, start_ns, end_ns,"
      " correlation, range FROM src.kernels;"
      "INSERT INTO plans SELECT id + " + p + ", run + " + r + ", created_ns, strategy, budget_bytes,"
      " json FROM src.plans;"
      "INSERT INTO verifications SELECT id + " + v + ", plan + " + p + ", baseline_run + " + r +
      ", run + " + r + ", verdict, created_ns, json FROM src.verifications;";
  try {
    exec(db, o, sql.c_str());
  } catch (const StoreError& e) {
    throw StoreError(path + ": cannot be merged (" + e.what() + ")");
  }
}

}  // namespace

MergeResult mergeTraces(const std::string& out_path, const std::vector<std::string>& inputs) {
  if (inputs.size() < 2) throw StoreError("merge: give the output and at least two traces");
  if (access(out_path.c_str(), F_OK) == 0)
    throw StoreError(out_path + ": already exists; merge writes a new file");
  std::vector<int64_t> launchers;
  std::vector<int> versions;
  for (const std::string& in : inputs) {
    launchers.push_back(jobLauncher(in));  // also checks that it is a readable trace
    TraceStore t(in, TraceStore::Mode::ReadOnly);
    versions.push_back(schemaVersionOf(t.handle(), in));
  }
  MergeResult result;
  try {
    TraceStore out(out_path, TraceStore::Mode::ReadWrite);
    sqlite3* db = out.handle();
    exec(db, out_path, "BEGIN IMMEDIATE");
    for (size_t i = 0; i < inputs.size(); ++i) {
      int64_t runs = scalar(db, out_path, "SELECT coalesce(max(id), 0) FROM runs");
      int64_t plans = scalar(db, out_path, "SELECT coalesce(max(id), 0) FROM plans");
      int64_t verifications = scalar(db, out_path, "SELECT coalesce(max(id), 0) FROM verifications");
      exec(db, out_path, "COMMIT");  // ATTACH is not allowed inside a transaction
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(db, "ATTACH DATABASE ? AS src", -1, &st, nullptr);
      sqlite3_bind_text(st, 1, inputs[i].c_str(), -1, SQLITE_TRANSIENT);
      int rc = sqlite3_step(st);
      sqlite3_finalize(st);
      if (rc != SQLITE_DONE) throw StoreError(inputs[i] + ": cannot attach (" + sqlite3_errmsg(db) + ")");
      exec(db, out_path, "BEGIN IMMEDIATE");
      copyFile(out, inputs[i], versions[i], runs, plans, verifications);
      int64_t launcher = launchers[i] + runs;
      if (i == 0) {
        result.job_run = launcher;
      } else {
        // This node's launcher and ranks join the first node's job.
        std::string j = std::to_string(result.job_run), l = std::to_string(launcher);
        std::string both = " FROM runs a JOIN runs b ON a.rank = b.rank WHERE a.job_run = " + j +
                           " AND b.job_run = " + l +
                           " AND a.rank >= 0 AND a.baseline_run = 0 AND b.baseline_run = 0";
        if (scalar(db, out_path, "SELECT count(*)" + both) > 0)
          throw StoreError(inputs[i] + ": rank " + std::to_string(scalar(db, out_path, "SELECT a.rank" + both)) +
                           " is also in " + inputs[0] +
                           "; were the nodes recorded with distinct --node_rank (torchrun gives node k "
                           "the ranks k*nproc_per_node ... (k+1)*nproc_per_node-1)?");
        exec(db, out_path, ("UPDATE runs SET job_run = " + j + " WHERE job_run = " + l + " OR id = " + l).c_str());
      }
      exec(db, out_path, "COMMIT");
      exec(db, out_path, "DETACH DATABASE src");
      exec(db, out_path, "BEGIN IMMEDIATE");
    }
    std::string j = std::to_string(result.job_run);
    result.ranks = static_cast<int>(scalar(
        db, out_path, "SELECT count(DISTINCT rank) FROM runs WHERE job_run = " + j +
                          " AND rank >= 0 AND baseline_run = 0"));
    result.runs = static_cast<int>(scalar(db, out_path, "SELECT count(*) FROM runs"));
    exec(db, out_path, "COMMIT");
  } catch (...) {
    unlink(out_path.c_str());  // no half-merged file left behind
    unlink((out_path + "-wal").c_str());
    unlink((out_path + "-shm").c_str());
    throw;
  }
  return result;
}

}  // namespace gcprof

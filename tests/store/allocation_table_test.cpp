// Schema version 3 (docs/schema.md): the allocations table is clustered by
// (run, alloc_ns, id) instead of a rowid table plus an index. These tests pin
// what readers rely on: the load is a walk along the key (no sort), rows are
// numbered per run in the order written, and older files still read and are
// converted, with their order kept, when written to.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "old_layouts.h"
#include "run_writer.h"
#include "schema.h"
#include "trace_store.h"

using namespace gcprof;

namespace {

std::string tempPath(const char* name) {
  std::string p = testing::TempDir() + "gcprof_alloc_table_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
  return p;
}

Allocation block(uint64_t addr, Ns alloc, Ns free) {
  Allocation a;
  a.addr = addr;
  a.bytes = 4096;
  a.alloc = alloc;
  a.free = free;
  return a;
}

// Column `col` of every row of `sql` as text.
std::vector<std::string> column(sqlite3* db, const std::string& sql, int col = 0) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, col);
    out.push_back(t ? reinterpret_cast<const char*>(t) : "");
  }
  sqlite3_finalize(st);
  return out;
}

void run(sqlite3* db, const char* sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

// Rows whose times tie and arrive out of time order: the load orders them by
// time, ties in the order written.
void writeRun(const std::string& path) {
  RunWriter w(path);
  w.createRun(RunInfo{});
  for (Ns t : {30, 10, 20, 10, 30}) w.add(block(0x1000 + t, t, t + 5));
  w.finish(RunInfo{});
}

}  // namespace

TEST(AllocationTable, LoadWalksThePrimaryKeyWithoutASort) {
  std::string path = tempPath("plan");
  writeRun(path);
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  ASSERT_EQ(schemaVersionOf(s.handle(), path), 3);
  std::vector<std::string> plan =
      column(s.handle(), "EXPLAIN QUERY PLAN SELECT id, addr FROM allocations WHERE run=1 "
                         "ORDER BY alloc_ns, id",
             3);  // the plan's `detail`
  ASSERT_FALSE(plan.empty());
  std::string all;
  for (const std::string& p : plan) all += p + "\n";
  EXPECT_NE(all.find("PRIMARY KEY"), std::string::npos) << all;
  EXPECT_EQ(all.find("TEMP B-TREE"), std::string::npos) << all;
  // One B-tree per row: no separate index on the table any more.
  EXPECT_TRUE(column(s.handle(), "SELECT name FROM sqlite_master WHERE type='index' "
                                 "AND tbl_name='allocations' AND sql IS NOT NULL").empty());
  Trace t = s.load(1);
  ASSERT_EQ(t.allocations.size(), 5u);
  std::vector<std::pair<Ns, int64_t>> got;
  for (const Allocation& a : t.allocations) got.push_back({a.alloc, a.id});
  EXPECT_EQ(got, (std::vector<std::pair<Ns, int64_t>>{{10, 2}, {10, 4}, {20, 3}, {30, 1}, {30, 5}}));
}

// The process `gcprof record` started opens the run that `record` made; after
// an exec it opens it again and numbers on after the rows already there (a
// repeated (alloc_ns, id) would fail the insert and stop the recording).
TEST(AllocationTable, ASelectedRunNumbersOnAfterItsRows) {
  std::string path = tempPath("select");
  writeRun(path);
  {
    RunWriter w(path);
    w.selectRun(1);
    w.add(block(0x9000, 10, 11));  // same time as two rows already written
    int64_t live = w.addLive(block(0x9100, 10, -1));
    EXPECT_EQ(live, 7);
    Allocation freed = block(0x9100, 10, 99);
    freed.id = live;
    w.setFree(freed);
    w.commit();
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  Trace t = s.load(1);
  ASSERT_EQ(t.allocations.size(), 7u);
  EXPECT_EQ(t.allocations[2].id, 6);
  EXPECT_EQ(t.allocations[2].addr, 0x9000u);
  EXPECT_EQ(t.allocations[3].id, 7);
  EXPECT_EQ(t.allocations[3].free, 99);
}

// A version 2 file (rowid table + allocations_time index) reads as it is and
// is converted when opened for writing; ids are the old rowids, so ties keep
// their order.
TEST(AllocationTable, VersionTwoFilesReadAndMigrateKeepingTheirOrder) {
  std::string path = tempPath("v2");
  writeRun(path);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    // Back to the version 2 layout (ties ordered only by the rowid).
    run(db, test::kRowidAllocations);
    run(db, "PRAGMA user_version = 2");
    sqlite3_close(db);
  }
  auto order = [&](TraceStore& s) {
    std::vector<std::pair<Ns, int64_t>> got;
    for (const Allocation& a : s.load(1).allocations) got.push_back({a.alloc, a.id});
    return got;
  };
  const std::vector<std::pair<Ns, int64_t>> want{{10, 102}, {10, 104}, {20, 103}, {30, 101}, {30, 105}};
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), 2);
    EXPECT_EQ(order(s), want);
  }
  {
    TraceStore s(path, TraceStore::Mode::ReadWrite);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), 3);
    EXPECT_EQ(order(s), want);
    EXPECT_NE(column(s.handle(), "SELECT sql FROM sqlite_master WHERE name='allocations'").at(0)
                  .find("WITHOUT ROWID"), std::string::npos);
  }
  {
    RunWriter w(path);  // appends number on after the migrated rows
    w.selectRun(1);
    EXPECT_EQ(w.addLive(block(0x7000, 10, -1)), 106);
  }
}

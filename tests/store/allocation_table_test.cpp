// Schema versions 3 and 4 (docs/schema.md): rows written one by one are in a
// table clustered by (run, alloc_ns, id) (`allocations` in version 3,
// `allocation_rows` in 4); from version 4 the recorder writes most rows many
// to a row of `allocation_batches`, and the view `allocations` shows both.
// These tests pin what readers rely on: the load is in (alloc_ns, id) order,
// rows are numbered per run in the order written, the view shows every row as
// the loader does, and older files still read and are converted, with their
// order kept, when written to.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "allocation_batch.h"
#include "allocation_stream.h"
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

RecordedAllocation block(uint64_t addr, Ns alloc, Ns free) {
  RecordedAllocation a;
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


// Every row of the view, in (alloc_ns, id) order, as "id:addr:alloc:free".
std::vector<std::string> viewRows(sqlite3* db) {
  return column(db, "SELECT id || ':' || addr || ':' || alloc_ns || ':' || free_ns || ':' || bytes"
                    " || ':' || device || ':' || step FROM allocations WHERE run=1 ORDER BY alloc_ns, id");
}

std::string rowText(const Allocation& a) {
  return std::to_string(a.id) + ":" + std::to_string(a.addr) + ":" + std::to_string(a.alloc) + ":" +
         std::to_string(a.free) + ":" + std::to_string(a.bytes) + ":" + std::to_string(a.device) + ":" +
         std::to_string(a.step);
}

std::vector<std::string> loadedRows(TraceStore& s) {
  std::vector<std::string> out;
  for (const Allocation& a : s.load(1).allocations) out.push_back(rowText(a));
  return out;
}

// loadedRows as the allocation stream (allocation_stream.h) hands them
// over, two rows a piece: what `gcprof export` reads must be what a load
// gives, in every layout.
std::vector<std::string> streamedRows(TraceStore& s) {
  std::vector<std::string> out;
  AllocationStream stream(s, 1, 2);
  stream.read([&](const std::vector<Allocation>& piece) {
    EXPECT_FALSE(piece.empty());
    EXPECT_LE(piece.size(), 2u);
    for (const Allocation& a : piece) out.push_back(rowText(a));
  });
  return out;
}

}  // namespace

TEST(AllocationTable, BatchedRowsLoadInTimeOrderAndTheViewShowsEachRow) {
  std::string path = tempPath("batched");
  writeRun(path);
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  ASSERT_GE(schemaVersionOf(s.handle(), path), 4);
  // The five rows of writeRun went to one batch, none to allocation_rows.
  EXPECT_EQ(column(s.handle(), "SELECT count(*) || ' ' || sum(count) FROM allocation_batches"),
            std::vector<std::string>{"1 5"});
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM allocation_rows"), std::vector<std::string>{"0"});
  Trace t = s.load(1);
  ASSERT_EQ(t.allocations.size(), 5u);
  std::vector<std::pair<Ns, int64_t>> got;
  for (const Allocation& a : t.allocations) got.push_back({a.alloc, a.id});
  EXPECT_EQ(got, (std::vector<std::pair<Ns, int64_t>>{{10, 2}, {10, 4}, {20, 3}, {30, 1}, {30, 5}}));
  std::vector<std::string> view = viewRows(s.handle());
  EXPECT_EQ(view, loadedRows(s));
  EXPECT_EQ(view.at(0), "2:4106:10:15:4096:-1:-1");
  EXPECT_EQ(streamedRows(s), view);
}

namespace {

// Blocks still live when written (as the recorder writes a block live past
// 50 ms), three of them freed later in another order than allocated, one
// never; and one block written at its free.
void writeLiveThenFreed(const std::string& path) {
  RunWriter w(path);
  w.createRun(RunInfo{});
  w.add(block(0x1000, 5, 8));
  std::vector<RecordedAllocation> live;
  for (Ns t : {30, 10, 20, 10}) {
    live.push_back(block(0x2000 + t, t, -1));
    live.back().id = w.addLive(live.back());
  }
  w.commit();  // the live rows, as a round's commit writes them
  for (size_t i : {2, 0, 3}) {
    live[i].free = 100 + live[i].alloc;
    w.setFree(live[i]);
  }
  w.commit();
}

// writeLiveThenFreed's rows as loadedRows and viewRows give them.
const std::vector<std::string> kLiveThenFreed{"1:4096:5:8:4096:-1:-1", "3:8202:10:-1:4096:-1:-1",
                                              "5:8202:10:110:4096:-1:-1", "4:8212:20:120:4096:-1:-1",
                                              "2:8222:30:130:4096:-1:-1"};

}  // namespace

// A block written live and its free are not a row of its own and an UPDATE
// of it (the cost of a job whose steps outlast 50 ms): the live rows go to
// the round's batch, each free to a row of allocation_frees, and the load
// and the view both give each block its free time.
TEST(AllocationTable, FreesOfBlocksWrittenLiveAreBatchedAndReadBackInLoadAndView) {
  std::string path = tempPath("frees");
  writeLiveThenFreed(path);
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM allocation_frees"), std::vector<std::string>{"3"});
  EXPECT_EQ(column(s.handle(), "SELECT count(*) || ' ' || sum(count) FROM allocation_batches"),
            std::vector<std::string>{"1 5"});
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM allocation_rows"), std::vector<std::string>{"0"});
  EXPECT_EQ(loadedRows(s), kLiveThenFreed);
  EXPECT_EQ(viewRows(s.handle()), kLiveThenFreed);
  EXPECT_EQ(streamedRows(s), kLiveThenFreed);
}

// A version 5 file (a block written live in a row of its own, its free
// written into that row) reads as it is and becomes version 6 when written
// to: its rows keep their free times, and the frees written after it reach
// the blocks written live after it.
TEST(AllocationTable, VersionFiveFilesReadAndMigrateKeepingTheirFrees) {
  std::string path = tempPath("v5");
  writeLiveThenFreed(path);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    run(db, test::kVersion5Frees);
    run(db, "PRAGMA user_version = 5");
    sqlite3_close(db);
  }
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), 5);
    EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM allocation_rows WHERE free_ns = -1"),
              std::vector<std::string>{"1"});  // the block never freed
    EXPECT_EQ(loadedRows(s), kLiveThenFreed);
    EXPECT_EQ(viewRows(s.handle()), kLiveThenFreed);
    EXPECT_EQ(streamedRows(s), kLiveThenFreed);
  }
  {
    RunWriter w(path);
    w.selectRun(1);
    RecordedAllocation a = block(0x3000, 40, -1);
    a.id = w.addLive(a);
    w.commit();
    a.free = 140;
    w.setFree(a);
    w.commit();
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(schemaVersionOf(s.handle(), path), kSchemaVersion);
  std::vector<std::string> want = kLiveThenFreed;
  want.push_back("6:12288:40:140:4096:-1:-1");
  EXPECT_EQ(loadedRows(s), want);
  EXPECT_EQ(viewRows(s.handle()), want);
  EXPECT_EQ(streamedRows(s), want);
}

// Rows written one by one (rows a batch cannot hold, rows merged from
// version 3 files) stay clustered by (run, alloc_ns, id): reading them is a
// walk along the key.
TEST(AllocationTable, RowsWrittenOneByOneWalkThePrimaryKeyWithoutASort) {
  std::string path = tempPath("plan");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (Ns t : {30, 10, 20}) w.add(block(0x1000 + t, t, t - 1));  // freed before allocated: no batch holds it
    w.finish(RunInfo{});
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  std::vector<std::string> plan =
      column(s.handle(), "EXPLAIN QUERY PLAN SELECT id, addr FROM allocation_rows WHERE run=1 "
                         "ORDER BY alloc_ns, id",
             3);  // the plan's `detail`
  ASSERT_FALSE(plan.empty());
  std::string all;
  for (const std::string& p : plan) all += p + "\n";
  EXPECT_NE(all.find("PRIMARY KEY"), std::string::npos) << all;
  EXPECT_EQ(all.find("TEMP B-TREE"), std::string::npos) << all;
  EXPECT_TRUE(column(s.handle(), "SELECT name FROM sqlite_master WHERE type='index' "
                                 "AND tbl_name='allocation_rows' AND sql IS NOT NULL").empty());
  EXPECT_EQ(viewRows(s.handle()).size(), 3u);
  EXPECT_EQ(s.load(1).allocations.size(), 3u);
}

// Rows of both tables, with the extremes a row can hold: the loader and the
// view agree on each, in one order.
TEST(AllocationTable, BatchesAndSingleRowsMergeInOneOrder) {
  std::string path = tempPath("mixed");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    RecordedAllocation big = block(0xffff'ffff'ffff'f000ull, 25, INT64_MAX);
    big.bytes = INT64_MAX;
    big.step = 7;
    big.device = 3;
    w.add(big);
    w.addLive(block(0x2000, 15, -1));
    w.add(block(0x3000, 5, 6));
    w.commit();
    w.add(block(0x4000, 15, 16));  // a second batch (after the commit)
    w.add(block(0x5000, INT64_MIN, 0));  // not relative to the batch: a row of its own
    w.finish(RunInfo{});
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM allocation_batches"), std::vector<std::string>{"2"});
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM allocation_rows"), std::vector<std::string>{"1"});
  std::vector<std::string> want{"5:20480:-9223372036854775808:0:4096:-1:-1",
                                "3:12288:5:6:4096:-1:-1", "2:8192:15:-1:4096:-1:-1",
                                "4:16384:15:16:4096:-1:-1",
                                "1:-4096:25:9223372036854775807:9223372036854775807:3:7"};
  EXPECT_EQ(viewRows(s.handle()), want);
  std::vector<std::string> loaded = loadedRows(s);
  EXPECT_EQ(streamedRows(s), loaded);
  ASSERT_EQ(loaded.size(), 5u);
  EXPECT_EQ(loaded[4], "1:18446744073709547520:25:9223372036854775807:9223372036854775807:3:7");
  loaded[4] = want[4];
  EXPECT_EQ(loaded, want);
}

// The StoreError of loading run 1 of `path` once `sql` changed it, "" when it loaded.
std::string loadErrorAfter(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  run(db, sql);
  sqlite3_close(db);
  try {
    TraceStore(path, TraceStore::Mode::ReadOnly).load(1);
  } catch (const StoreError& e) {
    return e.what();
  }
  return "";
}

// A damaged batch is an error naming the file, the run and the batch, not a
// silently shorter trace.
TEST(AllocationTable, ADamagedBatchIsAnErrorNamingTheFile) {
  std::string path = tempPath("damaged");
  writeRun(path);
  std::string what = loadErrorAfter(path, "UPDATE allocation_batches SET rows = substr(rows, 1, 40)");
  ASSERT_NE(what, "") << "a cut batch loaded";
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("run 1"), std::string::npos) << what;
  EXPECT_NE(what.find("batch from id 1 is damaged"), std::string::npos) << what;
  try {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    streamedRows(s);
    ADD_FAILURE() << "a cut batch streamed";
  } catch (const StoreError& e) {
    EXPECT_EQ(std::string(e.what()), what);
  }
}

// A row's range, step, device, api and kind are narrow in memory
// (trace.h): a stored value past its field is a damaged row, refused with
// where it is, never cut to another value; the widest that fit load as
// stored.
TEST(AllocationTable, AValuePastItsNarrowFieldIsAnErrorNotAnotherValue) {
  const BatchBase base{0, 0};
  std::vector<RecordedAllocation> out;
  std::string problem;
  for (const std::string& bad : std::vector<std::string>{
           "[[0,0,0,0,0,0,0,0,-1,2147483648,0,0]]", "[[0,0,0,0,0,0,0,0,-1,0,-2147483649,0]]",
           "[[0,0,0,32768,0,0,0,0,-1,0,0,0]]", "[[0,0,0,0,0,0,256,0,-1,0,0,0]]",
           "[[0,0,0,0,0,0,-1,0,-1,0,0,0]]", "[[0,0,0,0,0,0,0,0,-1,0,0,256]]"}) {
    problem.clear();
    EXPECT_FALSE(parseBatch(bad, base, out, problem)) << bad;
    EXPECT_NE(problem.find("out of range"), std::string::npos) << bad << ": " << problem;
  }
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(parseBatch("[[0,0,0,-32768,0,0,255,0,-1,2147483647,-2147483648,255]]", base, out, problem))
      << problem;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].device, -32768);
  EXPECT_EQ(out[0].api, 255);
  EXPECT_EQ(out[0].range, 2147483647);
  EXPECT_EQ(out[0].step, -2147483648LL);
  EXPECT_EQ(out[0].kind, 255);

  // A row of its own (allocation_rows): one no batch can hold.
  std::string path = tempPath("narrow");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    w.add(block(0x1000, 10, 5));
    w.finish(RunInfo{});
  }
  std::string what = loadErrorAfter(path, "UPDATE allocation_rows SET step = 4294967296");
  ASSERT_NE(what, "") << "a step past 32 bits loaded";
  EXPECT_NE(what.find(path), std::string::npos) << what;
  EXPECT_NE(what.find("run 1"), std::string::npos) << what;
  EXPECT_NE(what.find("out of range"), std::string::npos) << what;
}

TEST(AllocationBatch, ParsesWhatItWritesAndRefusesAnythingElse) {
  std::string text;
  beginBatch(text);
  const BatchBase base{7, 123456789};
  RecordedAllocation a = block(0x1234, -5, INT64_MAX - 10);
  a.id = 9;
  a.range = 77;
  ASSERT_TRUE(appendToBatch(text, base, a));
  RecordedAllocation live = block(1, 2000, -1);
  live.id = 8;
  ASSERT_TRUE(appendToBatch(text, base, live));
  // Not relative to the base without overflow, or freed before allocated:
  // refused, the batch unchanged (the writer gives such rows a row each).
  const std::string before = text;
  EXPECT_FALSE(appendToBatch(text, base, block(2, INT64_MIN, 5)));
  EXPECT_FALSE(appendToBatch(text, base, block(2, -10, INT64_MAX)));
  EXPECT_FALSE(appendToBatch(text, base, block(2, 50, 40)));
  EXPECT_FALSE(appendToBatch(text, base, block(2, 50, -2)));
  EXPECT_EQ(text, before);
  closeBatch(text);
  EXPECT_EQ(text.find("123456789"), std::string::npos) << "times relative to the base: " << text;
  std::vector<RecordedAllocation> out;
  std::string problem;
  ASSERT_TRUE(parseBatch(text, base, out, problem)) << problem;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].id, 9);
  EXPECT_EQ(out[0].addr, 0x1234u);
  EXPECT_EQ(out[0].alloc, -5);
  EXPECT_EQ(out[0].free, INT64_MAX - 10);
  EXPECT_EQ(out[0].range, 77);
  EXPECT_EQ(out[1].id, 8);
  EXPECT_EQ(out[1].alloc, 2000);
  EXPECT_EQ(out[1].free, -1);
  out.clear();
  EXPECT_TRUE(parseBatch("[]", base, out, problem));
  EXPECT_TRUE(out.empty());
  for (const std::string& bad : std::vector<std::string>{
           "", "[", "[[1,2,3]]", "[[1,2,3,4,5,6,7,8,9,10,11,x]]", text + " ", text.substr(0, text.size() - 1),
           "[[1,2,3,4,5,6,7,8,9,10,11,12],]", "[[0,0,0,0,0,0,0,0,-2,0,0,0]]",
           "[[0,0,0,0,0,0,0,9223372036854775807,0,0,0,0]]"}) {
    problem.clear();
    EXPECT_FALSE(parseBatch(bad, base, out, problem)) << bad;
    EXPECT_FALSE(problem.empty()) << bad;
  }
}

// Every number of a row is written as std::to_string writes it (the text is
// JSON for SQL readers), around the eight-digit steps of the writer's own
// formatting too, and parses back.
TEST(AllocationBatch, NumbersAreWrittenInPlainDecimalAtEveryLength) {
  std::vector<int64_t> values{0, 9, 10, 99999999, 100000000, 100000001, 1234567890123456,
                              9999999999999999, 10000000000000000, INT64_MAX, -1, -100000000,
                              INT64_MIN};
  for (int64_t power = 1;; power *= 10) {
    values.insert(values.end(), {power - 1, power, power + 7});
    if (power > INT64_MAX / 10) break;
  }
  const BatchBase base{0, 0};
  for (int64_t v : values) {
    std::string text;
    beginBatch(text);
    RecordedAllocation a = block(static_cast<uint64_t>(v), 0, -1);
    a.bytes = v;
    a.thread = v;
    ASSERT_TRUE(appendToBatch(text, base, a));
    closeBatch(text);
    const std::string n = std::to_string(v);
    EXPECT_EQ(text, "[[0," + n + "," + n + ",-1,0," + n + ",0,0,-1,0,-1,0]]");
    std::vector<RecordedAllocation> out;
    std::string problem;
    ASSERT_TRUE(parseBatch(text, base, out, problem)) << problem;
    EXPECT_EQ(out.at(0).addr, static_cast<uint64_t>(v));
    EXPECT_EQ(out.at(0).bytes, v);
    EXPECT_EQ(out.at(0).thread, v);
  }
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
    RecordedAllocation freed = block(0x9100, 10, 99);
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
    run(db, test::kVersion4Ranges);
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
    EXPECT_EQ(streamedRows(s), loadedRows(s));
  }
  {
    TraceStore s(path, TraceStore::Mode::ReadWrite);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), kSchemaVersion);
    EXPECT_EQ(order(s), want);
    EXPECT_NE(column(s.handle(), "SELECT sql FROM sqlite_master WHERE name='allocation_rows'").at(0)
                  .find("WITHOUT ROWID"), std::string::npos);
  }
  {
    RunWriter w(path);  // appends number on after the migrated rows
    w.selectRun(1);
    EXPECT_EQ(w.addLive(block(0x7000, 10, -1)), 106);
  }
}

// A version 3 file (every row in the clustered `allocations` table) reads as
// it is and becomes version 4 when written to: its rows move to
// allocation_rows unchanged (a rename, no copy), new ones number on after them.
TEST(AllocationTable, VersionThreeFilesReadAndMigrateKeepingTheirRows) {
  std::string path = tempPath("v3");
  writeRun(path);
  std::vector<std::string> before;
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    before = loadedRows(s);
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    run(db, test::kVersion3Allocations);
    run(db, test::kVersion4Ranges);
    run(db, "PRAGMA user_version = 3");
    sqlite3_close(db);
  }
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), 3);
    EXPECT_EQ(loadedRows(s), before);
    EXPECT_EQ(streamedRows(s), before);
  }
  {
    RunWriter w(path);
    w.selectRun(1);
    w.add(block(0x9000, 1, 2));
    w.commit();
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(schemaVersionOf(s.handle(), path), kSchemaVersion);
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM allocation_rows"), std::vector<std::string>{"5"});
  std::vector<std::string> after = loadedRows(s);
  ASSERT_EQ(after.size(), 6u);
  EXPECT_EQ(after[0], "6:36864:1:2:4096:-1:-1");
  EXPECT_EQ(streamedRows(s), after);
  after.erase(after.begin());
  EXPECT_EQ(after, before);
  EXPECT_EQ(viewRows(s.handle()).size(), 6u);
}

// A job killed mid-round keeps every batch committed before (the recorder
// commits the open batch with its round, docs/recording.md): here a writer
// process dies of SIGKILL with one batch committed and another open.
TEST(AllocationTable, AKilledWriterLeavesItsCommittedBatches) {
  std::string path = tempPath("killed");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (Ns t : {10, 20, 30}) w.add(block(0x1000 + t, t, t + 1));
    w.commit();
    for (Ns t : {40, 50}) w.add(block(0x1000 + t, t, t + 1));  // the open batch
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  std::vector<Ns> times;
  for (const Allocation& a : s.load(1).allocations) times.push_back(a.alloc);
  EXPECT_EQ(times, (std::vector<Ns>{10, 20, 30}));
  EXPECT_EQ(viewRows(s.handle()).size(), 3u);
}

// The frees of blocks written live are committed with their round: a killed
// writer leaves those committed freed and the one freed after its last
// commit live, as it was when the trace last held it.
TEST(AllocationTable, AKilledWriterKeepsItsCommittedFrees) {
  std::string path = tempPath("killed_frees");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RunWriter w(path);
    w.createRun(RunInfo{});
    std::vector<RecordedAllocation> live;
    for (Ns t : {10, 20, 30}) {
      live.push_back(block(0x1000 + t, t, -1));
      live.back().id = w.addLive(live.back());
    }
    w.commit();
    live[0].free = 15;
    w.setFree(live[0]);
    w.commit();
    live[1].free = 25;
    w.setFree(live[1]);  // the open batch of frees
    raise(SIGKILL);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  std::vector<Ns> frees;
  for (const Allocation& a : s.load(1).allocations) frees.push_back(a.free);
  EXPECT_EQ(frees, (std::vector<Ns>{15, -1, -1}));
  std::vector<std::string> view = viewRows(s.handle());
  ASSERT_EQ(view.size(), 3u);
  EXPECT_EQ(view[0], "1:4106:10:15:4096:-1:-1");
}

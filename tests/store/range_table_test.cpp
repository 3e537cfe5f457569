// Schema version 5 (docs/schema.md): the recorder writes ranges many to a row
// of `range_batches`, kernel time beside them in `range_device_time`, and the
// view `ranges` shows them one row each. These tests pin what readers rely
// on: every field and the order survive a batch, in the loader and in the
// view; kernel time reaches batched ranges and their parents; version 4 files
// read as they are and convert when written to.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "old_layouts.h"
#include "range_batch.h"
#include "run_writer.h"
#include "schema.h"
#include "trace_store.h"

using namespace gcprof;

namespace {

std::string tempPath(const char* name) {
  std::string p = testing::TempDir() + "gcprof_range_table_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
  return p;
}

std::vector<std::string> column(sqlite3* db, const std::string& sql) {
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    out.push_back(t ? reinterpret_cast<const char*>(t) : "");
  }
  sqlite3_finalize(st);
  return out;
}

void run(sqlite3* db, const char* sql) {
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
}

// A range as text, every field.
std::string fields(const Range& r) {
  return std::to_string(r.id) + "|" + r.name + "|" + std::to_string(static_cast<int>(r.domain)) + "|" +
         std::to_string(static_cast<int>(r.phase)) + "|" + std::to_string(r.thread) + "|" +
         std::to_string(r.depth) + "|" + std::to_string(r.parent) + "|" + std::to_string(r.start) + "|" +
         std::to_string(r.end) + "|" + std::to_string(r.step) + "|" + std::to_string(r.device_ns) + "|" +
         std::to_string(r.input_bytes) + "|" + std::to_string(r.output_bytes);
}

// Every row of the view, in (start_ns, id) order, as fields() writes a range.
std::vector<std::string> viewRows(sqlite3* db) {
  return column(db,
                "SELECT id || '|' || name || '|' || domain || '|' || phase || '|' || thread || '|' || depth || '|' ||"
                " parent || '|' || start_ns || '|' || end_ns || '|' || step || '|' || device_ns || '|' ||"
                " input_bytes || '|' || output_bytes FROM ranges WHERE run=1 ORDER BY start_ns, id");
}

std::vector<std::string> loadedRows(TraceStore& s) {
  std::vector<std::string> out;
  for (const Range& r : s.load(1).ranges) out.push_back(fields(r));
  return out;
}

// Ranges as a recorder writes them: each when it closes (a parent after its
// children), ids in the order they opened, names that need escaping in JSON,
// every field distinct. Times tie (ids 2 and 3 both start at 120).
std::vector<Range> closedRanges() {
  std::vector<Range> out;
  auto range = [&](int64_t id, const char* name, int64_t parent, Ns start, Ns end) {
    Range r;
    r.id = id;
    r.name = name;
    r.domain = id % 2 ? RangeDomain::Module : RangeDomain::Nvtx;
    r.phase = id % 3 ? Phase::Forward : Phase::Backward;
    r.thread = 1000 + id;
    r.depth = static_cast<int>(id % 4);
    r.parent = parent;
    r.start = start;
    r.end = end;
    r.step = id / 2;
    r.device_ns = id == 4 ? 777 : -1;  // set by hand (appendRun): kept without kernels
    r.input_bytes = 10 * id;
    r.output_bytes = 1ll << (30 + id);
    out.push_back(r);
  };
  range(2, "layers.0.\"attn\"", 1, 120, 150);
  range(3, "back\\slash\ttab\x01\x1f", 1, 120, 140);
  range(1, "layers.0", 0, 100, 200);
  range(4, "caf\xc3\xa9 \xf0\x9f\x98\x80", 0, 1'700'000'000'000'000'000, 1'700'000'000'000'000'500);
  range(5, "unclosed", 4, 300, 300);
  return out;
}

std::vector<std::string> fieldsOf(std::vector<Range> ranges) {
  std::stable_sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.start != b.start ? a.start < b.start : a.id < b.id;
  });
  std::vector<std::string> out;
  for (const Range& r : ranges) out.push_back(fields(r));
  return out;
}

}  // namespace

TEST(RangeTable, BatchedRangesKeepEveryFieldAndLoadInTimeOrder) {
  std::string path = tempPath("fields");
  const std::vector<Range> written = closedRanges();
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (const Range& r : written) w.add(r);
    w.finish(RunInfo{});
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  ASSERT_EQ(schemaVersionOf(s.handle(), path), kSchemaVersion);
  EXPECT_EQ(column(s.handle(), "SELECT count(*) || ' ' || sum(count) FROM range_batches"),
            std::vector<std::string>{"1 5"});
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM range_rows"), std::vector<std::string>{"0"});
  const std::vector<std::string> want = fieldsOf(written);
  EXPECT_EQ(loadedRows(s), want);
  EXPECT_EQ(viewRows(s.handle()), want);
}

TEST(RangeTable, ManyBatchesAndRowsOfTheirOwnLoadInIdOrderWithinATie) {
  std::string path = tempPath("many");
  std::vector<Range> written;
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    // 1200 ranges, all starting at once, written in reverse id order: three
    // batches; one whose end is past int64 from its start goes to range_rows.
    for (int64_t id = 1200; id >= 1; --id) {
      Range r;
      r.id = id;
      r.name = "m" + std::to_string(id);
      r.start = 5;
      r.end = id == 600 ? INT64_MIN : 9;
      written.push_back(r);
      w.add(r);
    }
    w.finish(RunInfo{});
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(column(s.handle(), "SELECT count(*) || ' ' || sum(count) FROM range_batches"),
            std::vector<std::string>{"3 1199"});
  EXPECT_EQ(column(s.handle(), "SELECT id FROM range_rows"), std::vector<std::string>{"600"});
  const std::vector<std::string> want = fieldsOf(written);
  EXPECT_EQ(loadedRows(s), want);
  EXPECT_EQ(viewRows(s.handle()), want);
  RunWriter w(path);  // an exec'd process numbers its ranges on after them
  w.selectRun(1);
  Range next;
  next.id = 1;
  w.add(next);
  w.commit();
  EXPECT_EQ(column(s.handle(), "SELECT max(id) FROM ranges"), std::vector<std::string>{"1201"});
}

TEST(RangeTable, KernelTimeReachesBatchedRangesAndTheirParentsInLoadAndView) {
  std::string path = tempPath("kernels");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (const Range& r : closedRanges()) w.add(r);
    for (auto [range, start, end] : {std::tuple{2, 10, 30}, {3, 40, 45}, {1, 50, 51}, {5, 0, 1000}, {99, 0, 7}}) {
      Kernel k;
      k.range = range;
      k.start = start;
      k.end = end;
      w.add(k);
    }
    w.attributeKernelTime();
    w.attributeKernelTime();  // a second process of the run (exec) attributes again: the same result
    w.finish(RunInfo{});
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  // 1 = its own 1 + children 2 (20) and 3 (5); 4 = 5's 1000 (its hand-set 777 replaced).
  const std::vector<std::string> want{"1:26", "2:20", "3:5", "4:1000", "5:1000"};
  std::vector<std::string> loaded;
  Trace t = s.load(1);
  std::sort(t.ranges.begin(), t.ranges.end(), [](const Range& a, const Range& b) { return a.id < b.id; });
  for (const Range& r : t.ranges) loaded.push_back(std::to_string(r.id) + ":" + std::to_string(r.device_ns));
  EXPECT_EQ(loaded, want);
  EXPECT_EQ(column(s.handle(), "SELECT id || ':' || device_ns FROM ranges ORDER BY id"), want);
}

// A version 4 file (one `ranges` table) reads as it is and becomes the current version
// when written to: its rows move to range_rows unchanged (a rename), kernel
// time reaches them, new ranges number on after them.
TEST(RangeTable, VersionFourFilesReadAndMigrateKeepingTheirRows) {
  std::string path = tempPath("v4");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    for (const Range& r : closedRanges()) w.add(r);
    w.finish(RunInfo{});
  }
  std::vector<std::string> before;
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    before = loadedRows(s);
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    run(db, test::kVersion5Frees);
    run(db, test::kVersion4Ranges);
    run(db, "PRAGMA user_version = 4");
    sqlite3_close(db);
  }
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    EXPECT_EQ(schemaVersionOf(s.handle(), path), 4);
    EXPECT_EQ(loadedRows(s), before);
  }
  {
    RunWriter w(path);
    w.selectRun(1);
    Range r;
    r.id = 1;  // numbered on: 6
    r.name = "after";
    r.parent = 0;
    r.start = 400;
    r.end = 410;
    w.add(r);
    Kernel k;
    k.range = 1;  // this process's range 1: "after"
    k.start = 0;
    k.end = 3;
    w.add(k);
    w.attributeKernelTime();
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(schemaVersionOf(s.handle(), path), kSchemaVersion);
  EXPECT_EQ(column(s.handle(), "SELECT count(*) FROM range_rows"), std::vector<std::string>{"5"});
  std::vector<std::string> after = loadedRows(s);
  ASSERT_EQ(after.size(), 6u);
  EXPECT_EQ(after[4], "6|after|0|0|0|0|0|400|410|-1|3|0|0");
  after.erase(after.begin() + 4);
  EXPECT_EQ(after, before);
  EXPECT_EQ(viewRows(s.handle()), loadedRows(s));
}

TEST(RangeBatch, NamesRoundTripThroughTheTextAndSQLitesJson) {
  const std::vector<Range> written = closedRanges();
  std::string text;
  beginBatch(text);
  for (const Range& r : written) ASSERT_TRUE(appendToBatch(text, BatchBase{2, 120}, r));
  closeBatch(text);
  std::vector<Range> read;
  std::string problem;
  ASSERT_TRUE(parseRangeBatch(text, BatchBase{2, 120}, read, problem)) << problem;
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) EXPECT_EQ(fields(read[i]), fields(written[i]));
  // What SQLite writes when a batch is edited by hand (json_replace) reads too.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT json_replace(?, '$[0][1]', ?)", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  const std::string odd = "q\"\\\n\r\t\b\f\x02 \xf0\x9f\x98\x80/";
  sqlite3_bind_text(st, 2, odd.data(), static_cast<int>(odd.size()), SQLITE_STATIC);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  std::string edited = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  read.clear();
  ASSERT_TRUE(parseRangeBatch(edited, BatchBase{2, 120}, read, problem)) << problem << "\n" << edited;
  EXPECT_EQ(read.at(0).name, odd);
  std::string escaped = "[[0,\"\\ud83d\\ude00\\u00e9\",1,1,0,0,0,0,0,0,-1,0,0]]";
  read.clear();
  ASSERT_TRUE(parseRangeBatch(escaped, BatchBase{}, read, problem)) << problem;
  EXPECT_EQ(read.at(0).name, "\xf0\x9f\x98\x80\xc3\xa9");
}

TEST(RangeBatch, DamagedTextSaysWhere) {
  std::vector<Range> read;
  std::string problem;
  for (const char* bad : {"[[0,\"a\",1,1,0,0,0,0,0,0,-1,0]]", "[[0,\"a,1,1,0,0,0,0,0,0,-1,0,0]]",
                          "[[0,\"\\q\",1,1,0,0,0,0,0,0,-1,0,0]]", "[[0,\"\\udc00\",1,1,0,0,0,0,0,0,-1,0,0]]",
                          "[[0,\"a\",99999999999,1,0,0,0,0,0,0,-1,0,0]]", "[[0,\"a\",1,1,0,0,0,0,0,0,-1,0,0]]x", "["}) {
    problem.clear();
    EXPECT_FALSE(parseRangeBatch(bad, BatchBase{}, read, problem)) << bad;
    EXPECT_NE(problem.find("byte"), std::string::npos) << bad << ": " << problem;
  }
}

// allocation_stream.h: a run's allocations handed over a piece at a time
// are a load's (TraceStore::load), row for row and field for field, each
// once, with its free applied: rows of batches written at their free (out of
// time order across batches), blocks written live whose frees are rows of
// allocation_frees, rows of their own, and another run in the same file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "allocation_stream.h"
#include "run_writer.h"
#include "trace_store.h"

using namespace gcprof;

namespace {

std::string tempPath(const char* name) {
  std::string p = testing::TempDir() + "gcprof_alloc_stream_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
  return p;
}

// A recorder's writing of one run: blocks written at their free in free
// order, those live past `kLiveAge` written live (their free later, into
// allocation_frees), a commit every round, and now and then a row no batch
// can hold (freed before allocated: a row of its own).
void writeRecordedRun(RunWriter& w, uint64_t seed, int blocks) {
  constexpr Ns kLiveAge = 500;
  std::mt19937_64 rng(seed);
  struct Pending {
    RecordedAllocation a;
    bool written_live = false;
  };
  std::vector<Pending> live;
  Ns now = 1000;
  int made = 0;
  while (made < blocks || !live.empty()) {
    if (made < blocks) {
      for (int k = static_cast<int>(rng() % 8); k >= 0 && made < blocks; --k, ++made) {
        RecordedAllocation a;
        a.addr = 0x10000 + rng() % 4096 * 64;
        a.bytes = static_cast<Bytes>(rng() % 100000) + 1;
        a.alloc = now + static_cast<Ns>(rng() % 3);  // ties
        // Some live long (written live), some never freed, some freed at once.
        const uint64_t kind = rng() % 20;
        a.free = kind == 0 ? -1 : kind < 4 ? a.alloc + 2000 + static_cast<Ns>(rng() % 5000)
                                           : a.alloc + static_cast<Ns>(rng() % 300);
        if (kind == 4) a.free = a.alloc - 1;  // no batch holds it
        a.device = static_cast<int16_t>(rng() % 3 == 0 ? static_cast<int>(rng() % 2) : -1);
        a.kind = static_cast<uint8_t>(a.device >= 0 ? rng() % 2 : 0);
        a.api = static_cast<uint8_t>(a.device >= 0 ? 25 : rng() % 3);
        a.stream = static_cast<int64_t>(rng() % 3);
        a.thread = 100 + static_cast<int64_t>(rng() % 4);
        a.range = static_cast<int32_t>(rng() % 50);
        a.step = static_cast<int32_t>(now / 10000);
        live.push_back({a, false});
      }
    }
    now += 100;
    // The round: frees due by now written (in free order), old blocks live.
    std::stable_sort(live.begin(), live.end(),
                     [](const Pending& x, const Pending& y) { return x.a.free < y.a.free; });
    std::vector<Pending> still;
    for (Pending& p : live) {
      const bool due = p.a.free >= 0 ? p.a.free <= now : made >= blocks;
      if (due && p.written_live) {
        if (p.a.free >= 0) w.setFree(p.a);
      } else if (due) {
        w.add(p.a);
      } else if (!p.written_live && now - p.a.alloc > kLiveAge) {
        RecordedAllocation row = p.a;
        row.free = -1;
        p.a.id = w.addLive(row);
        p.written_live = true;
        still.push_back(p);
      } else {
        still.push_back(p);
      }
    }
    live.swap(still);
    w.commit();
  }
}

void expectSameRow(const Allocation& got, const AllocationContexts& got_contexts, const Allocation& want,
                   const AllocationContexts& want_contexts, size_t i) {
  EXPECT_EQ(got.id, want.id) << i;
  EXPECT_EQ(got.addr, want.addr) << i;
  EXPECT_EQ(got.bytes, want.bytes) << i;
  EXPECT_EQ(got.alloc, want.alloc) << i;
  EXPECT_EQ(got.free, want.free) << i;
  EXPECT_EQ(got.range, want.range) << i;
  EXPECT_EQ(got.step, want.step) << i;
  EXPECT_EQ(got.device, want.device) << i;
  EXPECT_EQ(got.api, want.api) << i;
  EXPECT_EQ(got.kind, want.kind) << i;
  EXPECT_EQ(got_contexts[got.context], want_contexts[want.context]) << i;
}

// Reads `run` through a stream in pieces of `piece` rows, twice, and checks
// each pass against a load of the run.
void expectStreamIsLoad(TraceStore& s, int64_t run, size_t piece) {
  const Trace t = s.load(run);
  AllocationStream stream(s, run, piece);
  for (int pass = 0; pass < 2; ++pass) {  // export reads twice
    std::vector<Allocation> got;
    stream.read([&](const std::vector<Allocation>& rows) {
      ASSERT_FALSE(rows.empty());
      ASSERT_LE(rows.size(), piece);
      got.insert(got.end(), rows.begin(), rows.end());
    });
    ASSERT_EQ(got.size(), t.allocations.size()) << "run " << run << " piece " << piece;
    EXPECT_EQ(stream.rows(), static_cast<int64_t>(got.size()));
    for (size_t i = 0; i < got.size(); ++i) expectSameRow(got[i], stream.contexts(), t.allocations[i], t.contexts, i);
  }
}

void execSql(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

}  // namespace

TEST(AllocationStream, HandsOverEveryRowOnceAsALoadHasIt) {
  const std::string path = tempPath("recorded");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    writeRecordedRun(w, 1, 3000);
    w.finish(RunInfo{});
    w.createRun(RunInfo{});  // a second run in the file: not read with the first
    writeRecordedRun(w, 2, 6000);
    w.finish(RunInfo{});
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  for (int64_t run : {1, 2}) {
    ASSERT_GT(s.load(run).allocations.size(), 2000u);
    // Many batches, rows of their own and frees of blocks written live.
    for (size_t piece : {size_t{1}, size_t{333}, AllocationStream::kPieceRows}) expectStreamIsLoad(s, run, piece);
  }
  // The layouts the test meant to make: else it proves less than it says.
  auto count = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(s.handle(), sql, -1, &st, nullptr);
    int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    return n;
  };
  EXPECT_GT(count("SELECT count(*) FROM allocation_batches WHERE run=1"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM allocation_batch_starts WHERE run=1"),
            count("SELECT count(*) FROM allocation_batches WHERE run=1"));
  EXPECT_GT(count("SELECT count(*) FROM allocation_rows WHERE run=1"), 10);
  EXPECT_GT(count("SELECT count(*) FROM allocation_frees WHERE run=1"), 100);
}

// The stream's rows are those of the file when it was opened: a recorder
// writing on meanwhile changes neither pass (export reads twice).
TEST(AllocationStream, BothPassesSeeTheRowsOfOneMoment) {
  const std::string path = tempPath("moment");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    writeRecordedRun(w, 3, 500);
    w.commit();
  }
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  AllocationStream stream(s, 1, 64);
  size_t first = 0, second = 0;
  stream.read([&](const std::vector<Allocation>& rows) { first += rows.size(); });
  {
    RunWriter w(path);
    w.selectRun(1);
    writeRecordedRun(w, 4, 500);
    w.commit();
  }
  stream.read([&](const std::vector<Allocation>& rows) { second += rows.size(); });
  EXPECT_GT(first, 400u);
  EXPECT_EQ(second, first);
}

// Batches written before version 7 have no row in allocation_batch_starts:
// the stream parses them for their start, in a file still at version 6 and
// beside batches that have one (a newer gcprof recording into an old file).
TEST(AllocationStream, BatchesWithoutAStoredStartAreParsedForIt) {
  const std::string path = tempPath("unstarted");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    writeRecordedRun(w, 5, 4000);
    w.finish(RunInfo{});
  }
  execSql(path, "DELETE FROM allocation_batch_starts WHERE first_id % 3 = 1");
  {
    TraceStore s(path, TraceStore::Mode::ReadOnly);
    expectStreamIsLoad(s, 1, 100);
  }
  execSql(path, "DROP TABLE allocation_batch_starts; PRAGMA user_version = 6");
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  ASSERT_EQ(s.schemaVersion(), 6);
  expectStreamIsLoad(s, 1, 100);
}

// A stored start that is not its batch's earliest row would hand rows over
// out of time order: refused as damage, naming the file and the batch.
TEST(AllocationStream, AStoredStartThatIsNotTheBatchsEarliestRowIsRefused) {
  const std::string path = tempPath("badstart");
  {
    RunWriter w(path);
    w.createRun(RunInfo{});
    writeRecordedRun(w, 6, 3000);
    w.finish(RunInfo{});
  }
  execSql(path, "UPDATE allocation_batch_starts SET alloc_ns = alloc_ns + 1"
                " WHERE first_id = (SELECT max(first_id) FROM allocation_batch_starts)");
  TraceStore s(path, TraceStore::Mode::ReadOnly);
  AllocationStream stream(s, 1);
  try {
    stream.read([](const std::vector<Allocation>&) {});
    FAIL() << "a wrong stored start was read";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("allocation_batch_starts says it starts at"), std::string::npos) << e.what();
  }
}

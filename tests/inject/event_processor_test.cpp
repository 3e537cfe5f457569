// The writer's event logic on hand-made event sequences.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "event_processor.h"
#include "trace_store.h"

using namespace gcprof;
using namespace gcprof::inject;

namespace {

std::string tempDb(const char* name) {
  std::string p = testing::TempDir() + "gcprof_events_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
  return p;
}

Stamped ev(EventType type, Ns time, uint64_t a = 0, int64_t b = 0, int64_t c = 0, int64_t tid = 1) {
  Stamped s{};
  s.e.type = type;
  s.e.time = time;
  s.e.a = a;
  s.e.b = b;
  s.e.c = c;
  s.e.device = -1;
  s.tid = tid;
  return s;
}

void run(EventProcessor& p, std::vector<Stamped> events) {
  p.process(events.begin(), events.end());
  p.finish("complete", 0, Counters{}, "host", "native");
}

Trace load(const std::string& db) {
  TraceStore s(db, TraceStore::Mode::ReadOnly);
  EXPECT_EQ(s.runs().size(), 1u);
  return s.load(s.runs().at(0).id);
}

}  // namespace

TEST(EventProcessor, PairsAllocationsWithTheirFrees) {
  std::string db = tempDb("pairs");
  EventProcessor p(db, true);
  run(p, {ev(EventType::Alloc, 10, 0x1000, 4096), ev(EventType::Alloc, 11, 0x2000, 8192),
          ev(EventType::Free, 20, 0x1000)});
  Trace t = load(db);
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(t.allocations[0].free, 20);
  EXPECT_EQ(t.allocations[1].free, -1);  // live at exit
}

TEST(EventProcessor, AReusedAddressClosesTheEarlierAllocation) {
  // The free was reported by another thread whose event has not arrived yet.
  std::string db = tempDb("reuse");
  EventProcessor p(db, true);
  run(p, {ev(EventType::Alloc, 10, 0x1000, 4096), ev(EventType::Alloc, 30, 0x1000, 4096, 0, 2)});
  Trace t = load(db);
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(t.allocations[0].free, 30);
}

TEST(EventProcessor, FreesOfUnknownMemoryAreCounted) {
  std::string db = tempDb("unmatched");
  EventProcessor p(db, true);
  run(p, {ev(EventType::Free, 10, 0x9000)});
  EXPECT_EQ(load(db).run.unmatched_frees, 1);
}

TEST(EventProcessor, AProcessThatMarksNothingNeverTouchesTheTrace) {
  // Shells and launchers of the job: no run, not even an opened file.
  std::string db = tempDb("lazy");
  {
    EventProcessor p(db, false);
    run(p, {ev(EventType::Alloc, 10, 0x1000, 4096)});
  }
  EXPECT_NE(access(db.c_str(), F_OK), 0);
}

TEST(EventProcessor, AllocationsBeforeTheFirstRangeAreKeptOnceTheRunExists) {
  std::string db = tempDb("pending");
  EventProcessor p(db, false);
  const char* name = "layers.0";
  run(p, {ev(EventType::Alloc, 10, 0x1000, 4096),
          ev(EventType::RangeStart, 20, 1, reinterpret_cast<int64_t>(name), 1 | (1 << 8)),
          ev(EventType::RangeEnd, 30, 1)});
  Trace t = load(db);
  EXPECT_EQ(t.allocations.size(), 1u);
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.ranges[0].depth, 2);
  EXPECT_EQ(t.ranges[0].end, 30);
}

TEST(EventProcessor, OpenRangesAndStepsAreClosedAtFinish) {
  std::string db = tempDb("open");
  EventProcessor p(db, true);
  const char* name = "layers.1";
  run(p, {ev(EventType::StepBegin, 5, 0),
          ev(EventType::RangeStart, 20, 1, reinterpret_cast<int64_t>(name), 1 | (1 << 8))});
  Trace t = load(db);
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_GE(t.ranges[0].end, 20);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_GE(t.steps[0].end, 20);
}

TEST(EventProcessor, EachStepCarriesItsLiveBytesHighWaterMark) {
  std::string db = tempDb("peak");
  EventProcessor p(db, true);
  run(p, {ev(EventType::Alloc, 1, 0x1000, 1000),  // before the steps: persistent
          ev(EventType::StepBegin, 5, 0), ev(EventType::Alloc, 6, 0x2000, 500),
          ev(EventType::Alloc, 7, 0x3000, 300), ev(EventType::Free, 8, 0x2000),
          ev(EventType::Free, 9, 0x3000), ev(EventType::StepEnd, 10, 0),
          ev(EventType::StepBegin, 11, 1), ev(EventType::Alloc, 12, 0x2000, 100),
          ev(EventType::StepEnd, 13, 1)});
  Trace t = load(db);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].peak, 1800);
  EXPECT_EQ(t.steps[1].peak, 1100);
}

TEST(EventProcessor, LongLivedBlocksAreWrittenBeforeTheJobEnds) {
  // A job killed with SIGKILL never reaches finish(): what a round wrote
  // while the block was live is all the trace will have.
  std::string db = tempDb("live");
  const Ns age = EventProcessor::kLiveWriteAgeNs;
  {
    EventProcessor p(db, true);
    std::vector<Stamped> first = {ev(EventType::Alloc, 10, 0x1000, 4096),
                                  ev(EventType::Alloc, 11 + age, 0x2000, 8192)};
    p.process(first.begin(), first.end());
    p.commit(11 + age);
    Trace t = load(db);
    ASSERT_EQ(t.allocations.size(), 1u) << "only the block older than one round is written";
    EXPECT_EQ(t.allocations[0].bytes, 4096);
    EXPECT_EQ(t.allocations[0].free, -1);

    std::vector<Stamped> second = {ev(EventType::Free, 20 + 2 * age, 0x1000),
                                   ev(EventType::Alloc, 30 + 3 * age, 0x3000, 1024)};
    p.process(second.begin(), second.end());
    p.commit(30 + 3 * age);
    t = load(db);
    ASSERT_EQ(t.allocations.size(), 2u);
    EXPECT_EQ(t.allocations[0].free, 20 + 2 * age) << "the free time is filled in later";
    EXPECT_EQ(t.allocations[1].bytes, 8192);
    EXPECT_EQ(t.allocations[1].free, -1);
  }  // killed here: no finish()
  Trace t = load(db);
  EXPECT_EQ(t.allocations.size(), 2u) << "rows are not duplicated";
}

TEST(EventProcessor, BlocksWrittenWhileLiveAreNotWrittenTwiceAtFinish) {
  std::string db = tempDb("live_finish");
  const Ns age = EventProcessor::kLiveWriteAgeNs;
  EventProcessor p(db, true);
  std::vector<Stamped> first = {ev(EventType::Alloc, 10, 0x1000, 4096),
                                ev(EventType::Alloc, 10 + 2 * age, 0x2000, 8192)};
  p.process(first.begin(), first.end());
  p.commit(10 + 2 * age);
  run(p, {ev(EventType::Free, 20 + 3 * age, 0x2000)});
  Trace t = load(db);
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(t.allocations[0].free, -1);
  EXPECT_EQ(t.allocations[1].free, 20 + 3 * age);
}

// A job that allocates and then idles sends no later event: the age of its
// blocks is measured by the clock, so they are written before it is killed.
TEST(EventProcessor, AnIdleJobsBlocksAreWrittenByTheClock) {
  std::string db = tempDb("idle");
  const Ns age = EventProcessor::kLiveWriteAgeNs;
  EventProcessor p(db, true);
  std::vector<Stamped> held = {ev(EventType::Alloc, 10, 0x1000, 1 << 20),
                               ev(EventType::Alloc, 11, 0x2000, 1 << 20)};
  p.process(held.begin(), held.end());
  p.commit(11 + age / 2);
  EXPECT_NE(access(db.c_str(), F_OK), 0) << "younger than the cut-off: nothing written yet";
  p.commit(12 + age);  // no event since; only time has passed
  Trace t = load(db);
  ASSERT_EQ(t.allocations.size(), 2u);
  EXPECT_EQ(t.allocations[0].free, -1);
  EXPECT_EQ(t.allocations[1].free, -1);
}

// CUPTI delivers MEMORY2 records in buffers, after later steps began: a
// block belongs to the step its timestamp falls in.
TEST(EventProcessor, ALateRecordBelongsToTheStepOfItsTimestamp) {
  std::string db = tempDb("late");
  EventProcessor p(db, true);
  std::vector<Stamped> steps = {ev(EventType::StepBegin, 10, 0), ev(EventType::StepEnd, 20, 0),
                                ev(EventType::StepBegin, 30, 1)};
  p.process(steps.begin(), steps.end());
  Stamped late = ev(EventType::Alloc, 15, 0x1000, 4096);
  late.e.device = 0;
  Stamped early = ev(EventType::Alloc, 5, 0x2000, 4096);
  early.e.device = 0;
  run(p, {late, early, ev(EventType::Alloc, 35, 0x3000, 4096), ev(EventType::StepEnd, 40, 1)});
  Trace t = load(db);
  ASSERT_EQ(t.allocations.size(), 3u);
  for (const Allocation& a : t.allocations) {
    int64_t want = a.addr == 0x1000 ? 0 : a.addr == 0x2000 ? -1 : 1;
    EXPECT_EQ(a.step, want) << std::hex << a.addr << ": 0x1000 delivered during step 1, made in step 0";
  }
}

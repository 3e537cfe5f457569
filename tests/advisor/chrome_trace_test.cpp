// report/chrome_trace.h: `gcprof export` writes the document as it makes
// it, the run read a piece at a time from its file (allocation_stream.h),
// and that text is the one document of the run held whole gives, byte for
// byte, with the memory track downsampledCurve's (the points and peak
// export wrote before it streamed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "allocation_stream.h"
#include "memory/live_sweep.h"
#include "memory/memory_curve.h"
#include "report/chrome_trace.h"
#include "trace_file.h"
#include "trace_store.h"

namespace gcprof::advisor {
namespace {

std::string tempPath(const std::string& name) {
  std::string p = ::testing::TempDir() + "gcprof_chrome_trace_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
  return p;
}

Range range(int64_t id, const std::string& name, Phase phase, int64_t thread, Ns start, Ns end) {
  Range r;
  r.id = id;
  r.name = name;
  r.domain = RangeDomain::Module;
  r.phase = phase;
  r.thread = thread;
  r.depth = 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
  r.start = start;
  r.end = end;
  r.step = start < 1000 ? 0 : 1;
  return r;
}

enum class Memory { HostOnly, DeviceSegments, DeviceTensorsAndSegments };

// Two steps on two threads: ranges that nest and ranges that overlap (a
// backward starting before a forward ends: lanes), kernel time, module
// input and output bytes; a scalar of a step not recorded; kernels on two
// streams; allocations with ties, frees at others' allocation instants,
// blocks never freed, written in shuffled order (batches out of time order).
Trace fabricated(Memory memory, uint64_t seed) {
  Trace t;
  t.run.name = "fabricated";
  t.ranges = {range(1, "layers.0", Phase::Forward, 7, 100, 500),
              range(2, "layers.0.mlp", Phase::Forward, 7, 150, 300),
              range(3, "layers.0", Phase::Backward, 7, 400, 900),
              range(4, "layers.1", Phase::Forward, 8, 1100, 1600),
              range(5, "", Phase::User, 8, 1200, 1200)};
  t.ranges[0].device_ns = 1234;
  t.ranges[1].input_bytes = 4096;
  t.ranges[1].output_bytes = 8192;
  t.steps = {{0, 50, 1000, 0}, {1, 1000, 2000, 0}};
  t.scalars = {{0, "loss", 2.5}, {1, "loss", 0.1 + 0.2}, {5, "loss", 9.0}};
  if (memory != Memory::HostOnly) {
    Kernel k;
    k.name = "gemm";
    k.stream = 7;
    k.start = 120;
    k.end = 180;
    k.correlation = 11;
    k.range = 2;
    t.kernels.push_back(k);
    k.name = "relu";
    k.stream = 13;
    k.start = 1150;
    k.end = 1149;  // ends before it starts: no negative duration
    t.kernels.push_back(k);
  }
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < 4000; ++i) {
    Allocation a;
    a.alloc = 60 + static_cast<Ns>(rng() % 1900);
    const uint64_t life = rng() % 10;
    a.free = life == 0 ? -1 : life == 1 ? a.alloc : a.alloc + static_cast<Ns>(rng() % (life * 40));
    a.bytes = static_cast<Bytes>(rng() % 5000) + (life == 2 ? 0 : 1);
    a.addr = 0x1000 + rng() % 100000;
    const uint64_t where = rng() % 3;
    if (memory == Memory::DeviceTensorsAndSegments && where == 1) {
      a.device = 0;
      a.kind = 0;
      a.api = 25;
    } else if (memory != Memory::HostOnly && where == 2) {
      a.device = 0;
      a.kind = 1;
      a.api = 25;
    }
    t.allocations.push_back(a);
  }
  return t;
}

std::string streamedExport(TraceStore& store, int64_t run, size_t piece, size_t max_points, size_t* events) {
  AllocationStream stream(store, run, piece);
  const Trace rest = store.loadWithoutAllocations(run);
  EXPECT_TRUE(rest.allocations.empty());
  std::string text;
  *events = writeChromeTrace(
      rest, [&](const AllocationPiece& take) { stream.read(take); }, [&](std::string_view s) { text += s; },
      max_points);
  return text;
}

TEST(ChromeTrace, TheStreamedExportIsTheWholeRunsDocument) {
  for (Memory memory : {Memory::HostOnly, Memory::DeviceSegments, Memory::DeviceTensorsAndSegments}) {
    const std::string path = tempPath("stream" + std::to_string(static_cast<int>(memory)));
    const int64_t run = testing::writeTrace(path, fabricated(memory, 7 + static_cast<int>(memory)));
    TraceStore store(path, TraceStore::Mode::ReadOnly);
    const Trace whole = store.load(run);
    const AllocationFilter filter = primaryFilter(whole);
    EXPECT_EQ(filter.device, memory != Memory::HostOnly);
    for (size_t max_points : {size_t{3}, size_t{50}, kMaxCounterPoints}) {
      const std::string want = chromeTrace(whole, max_points).dump();
      size_t events = 0;
      const std::string got = streamedExport(store, run, 97, max_points, &events);
      ASSERT_EQ(got, want) << "memory " << static_cast<int>(memory) << ", " << max_points << " points";
      const nlohmann::json doc = nlohmann::json::parse(got);
      EXPECT_EQ(events, doc["traceEvents"].size());

      // The counter track is the whole curve downsampled (memoryCurve's
      // sorted events, downsample's buckets), not only the streamed path's own.
      const std::vector<MemoryPoint> points = downsample(memoryCurve(whole, filter).points, max_points);
      EXPECT_EQ(doc["otherData"]["peak_bytes"].get<Bytes>(), memoryCurve(whole).peak);
      EXPECT_EQ(doc["otherData"]["memory"], filter.describe());
      std::vector<Bytes> levels;
      for (const auto& e : doc["traceEvents"])
        if (e["ph"] == "C" && e["name"] == "live bytes (" + filter.describe() + ")")
          levels.push_back(e["args"]["bytes"].get<Bytes>());
      ASSERT_EQ(levels.size(), points.size()) << max_points;
      for (size_t i = 0; i < levels.size(); ++i) EXPECT_EQ(levels[i], points[i].live) << i;
      if (max_points < 100) {
        EXPECT_LE(levels.size(), max_points + 1);
      }
    }
  }
}

// main's `gcprof export` (8af23c3) of the file the test below writes.
const char* const kSmallRunAsBefore =
    R"js({"displayTimeUnit":"ms",)js"
    R"js("otherData":{"generator":"gcprof export","memory":"device tensors","peak_bytes":4096,"run":1},)js"
    R"js("traceEvents":[)js"
    R"js({"args":{"name":"gcprof run 1 (host)"},"name":"process_name","ph":"M","pid":1},)js"
    R"js({"args":{"depth":2,"step":0},"cat":"forward","dur":0.4,"name":"layers.0","ph":"X","pid":1,"tid":56,"ts":0.05},)js"
    R"js({"args":{"depth":2,"step":0},"cat":"backward","dur":0.5,"name":"layers.0 (backward)","ph":"X","pid":1,"tid":57,"ts":0.35},)js"
    R"js({"args":{"name":"thread 7"},"name":"thread_name","ph":"M","pid":1,"tid":56},)js"
    R"js({"args":{"name":"thread 7 (overlapping 1)"},"name":"thread_name","ph":"M","pid":1,"tid":57},)js"
    R"js({"cat":"step","name":"step 0","ph":"i","pid":1,"s":"p","tid":0,"ts":0.0},)js"
    R"js({"args":{"loss":0.30000000000000004},"name":"loss","ph":"C","pid":1,"ts":0.95},)js"
    R"js({"args":{"bytes":4096},"name":"live bytes (device tensors)","ph":"C","pid":2,"ts":0.09},)js"
    R"js({"args":{"bytes":0},"name":"live bytes (device tensors)","ph":"C","pid":2,"ts":0.55},)js"
    R"js({"args":{"name":"gcprof run 1 (device)"},"name":"process_name","ph":"M","pid":2})js"
    R"js(]})js";

// A run of a few rows exported as main's gcprof wrote it before export
// streamed (its `gcprof export` of this file, byte for byte).
TEST(ChromeTrace, ASmallRunIsWrittenAsBefore) {
  Trace t;
  t.ranges = {range(1, "layers.0", Phase::Forward, 7, 100, 500), range(2, "layers.0", Phase::Backward, 7, 400, 900)};
  t.steps = {{0, 50, 1000, 0}};
  t.scalars = {{0, "loss", 0.1 + 0.2}};
  Allocation a;
  a.alloc = 120;
  a.free = 450;
  a.bytes = 1000;
  t.allocations.push_back(a);
  a.alloc = 130;
  a.free = -1;
  a.bytes = 24;
  t.allocations.push_back(a);
  a.alloc = 140;
  a.free = 600;
  a.bytes = 4096;
  a.device = 0;
  a.api = 25;
  t.allocations.push_back(a);
  const std::string path = tempPath("small");
  const int64_t run = testing::writeTrace(path, t);
  TraceStore store(path, TraceStore::Mode::ReadOnly);
  size_t events = 0;
  const std::string got = streamedExport(store, run, 1, kMaxCounterPoints, &events);
  EXPECT_EQ(got, kSmallRunAsBefore);
  EXPECT_EQ(chromeTrace(store.load(run)).dump(), kSmallRunAsBefore);
  EXPECT_EQ(events, 10u);
}

// A name that is not UTF-8 (a scalar's or a kernel's: the recorder mends
// only range names) is the error the whole document's dump() gave, raised
// before the first byte: stdout gets nothing, not half a document.
TEST(ChromeTrace, ANameThatIsNotUtf8IsAnErrorBeforeAnythingIsWritten) {
  for (int where = 0; where < 3; ++where) {
    Trace t = fabricated(Memory::DeviceTensorsAndSegments, 5);
    std::stable_sort(t.allocations.begin(), t.allocations.end(),
                     [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
    const std::string bad = "lo\xffss";
    if (where == 0) t.ranges[2].name = bad;
    if (where == 1) t.scalars[1].name = bad;
    if (where == 2) t.kernels[1].name = bad;
    std::string text;
    try {
      writeChromeTrace(
          t, [&](const AllocationPiece& take) { take(t.allocations); }, [&](std::string_view s) { text += s; });
      ADD_FAILURE() << "written: " << where;
    } catch (const nlohmann::json::type_error& e) {
      EXPECT_EQ(e.id, 316) << e.what();
      EXPECT_EQ(std::string(e.what()), "[json.exception.type_error.316] invalid UTF-8 byte at index 2: 0xFF");
    }
    EXPECT_EQ(text, "") << where;
  }
}

// A Trace built by hand out of time order: the document of its rows in order.
TEST(ChromeTrace, RowsOutOfTimeOrderAreTheDocumentOfTheRowsInOrder) {
  Trace t = fabricated(Memory::DeviceTensorsAndSegments, 3);
  t.allocations.resize(300);
  Trace sorted = t;
  std::stable_sort(sorted.allocations.begin(), sorted.allocations.end(),
                   [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
  ASSERT_FALSE(inTimeOrder(t.allocations));
  EXPECT_EQ(chromeTrace(t, 40).dump(), chromeTrace(sorted, 40).dump());
}

}  // namespace
}  // namespace gcprof::advisor

// streamedModuleStats (what `gcprof show` reads from a run handed over a
// piece at a time) against the loaded trace's moduleStats, allocationsPeak
// and ParameterGathers, in each memory primaryFilter may choose.
#include "units/streamed_module_stats.h"

#include <gtest/gtest.h>

#include "memory/memory_events.h"
#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

using testing::TraceBuilder;

// Two steps of a nested chain; each call makes one row of every memory
// that `kinds` names ('h' host, 't' device tensor, 's' device segment),
// the first device row only in the second step's second layer.
Trace chainIn(const std::string& kinds) {
  TraceBuilder b;
  for (int s = 0; s < 2; ++s) {
    const Ns o = 1000 * s;
    b.step(s, o, o + 999);
    b.range("", Phase::Forward, o + 10, o + 300, s);
    b.range("", Phase::Backward, o + 400, o + 900, s);
    for (int l = 0; l < 3; ++l) {
      const Ns f = o + 20 + 90 * l, bw = o + 800 - 120 * l;
      const std::string name = "layers." + std::to_string(l);
      b.range(name, Phase::Forward, f, f + 80, s);
      b.range(name, Phase::Backward, bw, bw + 100, s);
      for (size_t k = 0; k < kinds.size(); ++k) {
        const bool late = s == 1 && l == 1;
        const Bytes bytes = (1 << (4 * k)) * (l + 1) * (s + 1);
        if (kinds[k] == 'h') b.alloc(f + 5, bw + 50, bytes, -1, s);
        if (kinds[k] == 't' && late) b.alloc(f + 6, bw + 50, bytes, 0, s);
        if (kinds[k] == 's' && late) b.alloc(f + 7, bw + 50, bytes, 0, s, AllocKind::Segment);
        b.alloc(f + 8, bw + 150, 3, -1, s);  // freed after its backward: nobody's
      }
    }
  }
  b.alloc(0, -1, 5000);
  return b.build();
}

// The trace's rows in pieces of three.
AllocationPass piecesOf(const Trace& t) {
  return [&t](const AllocationPiece& take) {
    for (size_t i = 0; i < t.allocations.size(); i += 3)
      take(std::vector<Allocation>(t.allocations.begin() + static_cast<std::ptrdiff_t>(i),
                                   t.allocations.begin() + static_cast<std::ptrdiff_t>(std::min(i + 3, t.allocations.size()))));
  };
}

void expectAsLoaded(const Trace& t, const std::string& memory) {
  const StreamedModuleStats s = streamedModuleStats(t.ranges, piecesOf(t));
  const AllocationFilter filter = primaryFilter(t);
  EXPECT_EQ(s.survey.filter.describe(), memory);
  EXPECT_EQ(filter.describe(), memory);
  EXPECT_EQ(s.survey.peak, allocationsPeak(t.allocations, filter));
  const std::vector<ModuleStats> loaded = moduleStats(t, filter);
  ASSERT_EQ(s.modules.size(), loaded.size());
  bool any_saved = false;
  for (size_t i = 0; i < loaded.size(); ++i) {
    EXPECT_EQ(s.modules[i].name, loaded[i].name);
    EXPECT_EQ(s.modules[i].saved_bytes, loaded[i].saved_bytes) << loaded[i].name;
    EXPECT_EQ(s.modules[i].forward_ns, loaded[i].forward_ns);
    any_saved = any_saved || loaded[i].saved_bytes > 0;
  }
  EXPECT_TRUE(any_saved) << "the test's trace saves nothing";
}

TEST(StreamedModuleStats, HostRun) { expectAsLoaded(chainIn("h"), "host"); }
TEST(StreamedModuleStats, DeviceTensorsFirstMadeMidRun) { expectAsLoaded(chainIn("ht"), "device tensors"); }
TEST(StreamedModuleStats, DeviceSegmentsFirstMadeMidRun) { expectAsLoaded(chainIn("hs"), "device segments"); }
TEST(StreamedModuleStats, TensorsAndSegmentsCountTensors) { expectAsLoaded(chainIn("hts"), "device tensors"); }

TEST(StreamedModuleStats, GathersAsFromTheLoadedRows) {
  Trace t = chainIn("h");
  Range g;
  g.id = 1000;
  g.name = "fsdp.unshard layers.1";
  g.start = 100;
  g.end = 110;
  t.ranges.push_back(g);
  t.allocations[3].range = 1000;
  t.allocations[5].range = 1000;
  const StreamedModuleStats s = streamedModuleStats(t.ranges, piecesOf(t));
  ASSERT_EQ(s.gathers.size(), 1u);
  EXPECT_EQ(s.gathers[0].module, "layers.1");
  EXPECT_EQ(s.gathers[0].ranges, 1);
  EXPECT_EQ(s.gathers[0].bytes, t.allocations[3].bytes + t.allocations[5].bytes);
}

}  // namespace
}  // namespace gcprof::advisor

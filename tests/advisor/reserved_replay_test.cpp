// Reserved memory from the replay simulator: recorded device tensor events
// (and a plan's) fed through the caching allocator model.
#include <gtest/gtest.h>

#include "chain_run.h"
#include "simulate/device_peaks.h"
#include "simulate/replay_simulator.h"
#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

constexpr Bytes KiB = 1024, MiB = 1024 * 1024;

// Worked by hand: A and B share a 20 MiB segment, C a 2 MiB small one; D
// takes the segment's free end; E fits neither freed hole (6 and 9 MiB) and
// needs a 16 MiB segment of its own.
Trace handTrace() {
  testing::TraceBuilder b;
  b.alloc(0, 30, 3 * MiB, 0);     // A
  b.alloc(10, 40, 3 * MiB, 0);    // B
  b.alloc(20, -1, 600 * KiB, 0);  // C
  b.alloc(35, 50, 5 * MiB, 0);    // D
  b.alloc(45, 60, 16 * MiB, 0);   // E
  return b.build();
}

Simulation replay(const Trace& t, const AllocatorSettings& s) {
  AllocationFilter device = primaryFilter(t);
  SimulationOptions o;
  o.allocator = &s;
  return simulate(t, device, stepLayouts(t, {}), {}, o);
}

TEST(ReservedReplay, RecordedEventsThroughTheNativeAllocator) {
  Trace t = handTrace();
  Simulation sim = replay(t, AllocatorSettings{});
  EXPECT_EQ(sim.peak, 600 * KiB + 21 * MiB);
  EXPECT_EQ(sim.reserved_peak, 38 * MiB);
  EXPECT_EQ(sim.reserved_peak_time, 45);
  EXPECT_EQ(sim.allocated_blocks_peak, 600 * KiB + 21 * MiB);
}

TEST(ReservedReplay, ExpandableSegmentsGrowTheStreamsSegment) {
  // One 20 MiB page holds A, B and D (the 3 MiB hole A leaves is too small
  // for D); E extends the 9 MiB free end by one more 20 MiB page; C has the
  // small pool's 2 MiB page.
  Simulation sim = replay(handTrace(), AllocatorSettings::parse("expandable_segments:True"));
  EXPECT_EQ(sim.reserved_peak, 42 * MiB);
}

TEST(ReservedReplay, WithoutAnAllocatorNothingIsReplayed) {
  Trace t = handTrace();
  Simulation sim = simulate(t, primaryFilter(t), stepLayouts(t, {}), {});
  EXPECT_EQ(sim.reserved_peak, 0);
}

TEST(ReservedReplay, DevicesHaveAllocatorsOfTheirOwn) {
  testing::TraceBuilder b;
  b.alloc(0, 10, 1 * MiB, 0);
  b.alloc(20, -1, 1 * MiB, 1);  // device 1 cannot reuse device 0's segment
  Simulation sim = replay(b.build(), AllocatorSettings{});
  EXPECT_EQ(sim.reserved_peak, 4 * MiB);
}

// A segment's blocks serve the stream it was made for: two small tensors
// live at once share one 2 MiB segment on one stream, not on two.
TEST(ReservedReplay, StreamsHaveSegmentsOfTheirOwn) {
  testing::TraceBuilder b;
  b.alloc(0, 10, 600 * KiB, 0);
  b.alloc(5, 20, 600 * KiB, 0);
  Trace one_stream = b.build();
  Trace two_streams = one_stream;
  two_streams.allocations[1].context = two_streams.contexts.intern({7, 0});
  EXPECT_EQ(replay(one_stream, AllocatorSettings{}).reserved_peak, 2 * MiB);
  EXPECT_EQ(replay(two_streams, AllocatorSettings{}).reserved_peak, 4 * MiB);
  EXPECT_EQ(replayedReservedPeak(one_stream), 2 * MiB);
  EXPECT_EQ(replayedReservedPeak(two_streams), 4 * MiB);
}

// A plan's replay: recomputed copies are allocated while the recorded ones
// may still be live, and every copy is released; reserved memory never falls
// below the allocated peak and, for a plan that lowers the allocated peak
// this much, stays below the baseline's.
TEST(ReservedReplay, APlansRecomputedCopiesGoThroughTheAllocator) {
  testing::ChainSpec spec;
  spec.units = 4;
  spec.params = 40 * MiB;
  spec.transient = 3 * MiB;
  spec.saved = 24 * MiB;
  spec.output = 6 * MiB;
  spec.grad = 2 * MiB;
  Trace t = testing::chainTrace(spec);
  for (Allocation& a : t.allocations) a.device = 0;
  testing::ChainRun f(t, spec.units);
  AllocatorSettings s;
  SimulationOptions o;
  o.allocator = &s;
  Simulation none = simulate(f.trace, f.filter, f.layout, {}, o);
  Simulation every = simulate(f.trace, f.filter, f.layout, {{0, 0}, {1, 1}, {2, 2}, {3, 3}}, o);
  EXPECT_LT(every.peak, none.peak);
  EXPECT_GE(none.reserved_peak, none.peak);
  EXPECT_GE(every.reserved_peak, every.peak);
  EXPECT_LT(every.reserved_peak, none.reserved_peak);
}

// PyTorch's allocator observed through its trace tracker: both peaks are its
// own rows (the tensors it handed out, the segments it reserved), and a raw
// cudaMalloc it never saw (NCCL's buffer, CUPTI's row) is a series apart,
// counted in neither.
TEST(DevicePeaks, ObservedAllocatorRowsAloneMakeAllocatedAndReserved) {
  Trace t;
  auto add = [&](Ns at, Ns free, Bytes bytes, AllocKind kind, AllocApi api) {
    Allocation a;
    a.id = static_cast<int64_t>(t.allocations.size()) + 1;
    a.addr = 0x7f0000000000 + static_cast<uint64_t>(a.id) * (64 * MiB);
    a.alloc = at;
    a.free = free;
    a.bytes = bytes;
    a.device = 0;
    a.kind = static_cast<int>(kind);
    a.api = static_cast<int>(api);
    t.allocations.push_back(a);
  };
  add(0, -1, 20 * MiB, AllocKind::Segment, AllocApi::C10CachingAllocator);
  add(1, 5, 3 * MiB, AllocKind::Tensor, AllocApi::C10CachingAllocator);
  add(2, 6, 4 * MiB, AllocKind::Tensor, AllocApi::C10CachingAllocator);
  add(3, 7, 64 * MiB, AllocKind::Segment, AllocApi::CudaMalloc);  // NCCL
  DevicePeaks p = devicePeaks(t);
  EXPECT_TRUE(p.observed_allocator);
  EXPECT_EQ(p.allocated, 7 * MiB);
  EXPECT_EQ(p.reserved, 20 * MiB) << "memory PyTorch does not see counted as reserved";
  EXPECT_EQ(p.reserved_source, "segments");
  EXPECT_EQ(p.other, 64 * MiB);
}

}  // namespace
}  // namespace gcprof::advisor

// PyTorch's caching allocator, observed, through the whole recording path:
// fabricated c10 TraceEntry sequences -> translation -> the recorder's
// thread buffer -> the writer's event logic -> SQLite rows, beside the raw
// cudaMalloc/cudaFree CUPTI reports for the same memory. No GPU needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "allocator_events.h"
#include "c10_record.h"
#include "event_processor.h"
#include "recorder.h"
#include "recording_state.h"
#include "thread_state.h"
#include "trace.h"
#include "trace_store.h"

namespace gcprof::allocator_trace {
namespace {

using inject::EventProcessor;
using inject::Stamped;
using Entry = c10::CachingDeviceAllocator::TraceEntry;

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSegmentAddr = 0x7f2000000000;
constexpr int kCudaMalloc = static_cast<int>(AllocApi::CudaMalloc);
constexpr int kTensorKind = static_cast<int>(AllocKind::Tensor);
constexpr int kSegmentKind = static_cast<int>(AllocKind::Segment);

// What the injector's gcprof_inject_device_alloc / _free do (c_api.cpp).
class RecorderSink : public DeviceMemorySink {
 public:
  void allocate(uint64_t addr, int64_t bytes, int device, int64_t stream, int kind) override {
    inject::recordAlloc(addr, bytes, inject::kApiC10CachingAllocator, device, stream, kind, true);
  }
  void release(uint64_t addr, int device, int kind) override { inject::recordFree(addr, device, 0, kind); }
};

Entry entry(Entry::Action action, uint64_t addr, uint64_t size) {
  return Entry(action, 0, addr, size, reinterpret_cast<void*>(0x51), c10::MempoolId_t{0, 0}, 0);
}

std::string tempDb(const char* name) {
  std::string p = testing::TempDir() + "gcprof_c10_" + name + "_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((p + ext).c_str());
  return p;
}

// Runs `job` with recording on and writes what it recorded into a fresh trace.
template <typename Job>
Trace recordAndLoad(const char* name, Job job) {
  inject::recordingState().ready.store(true);
  job();
  inject::recordingState().ready.store(false);
  std::vector<inject::Event> events(256);
  uint32_t n = inject::threadState()->drain(events.data(), static_cast<uint32_t>(events.size()));
  std::vector<Stamped> stamped;
  for (uint32_t i = 0; i < n; ++i)
    if (events[i].type == inject::EventType::Alloc || events[i].type == inject::EventType::Free)
      stamped.push_back({events[i], 1});
  std::string db = tempDb(name);
  EventProcessor p(db, true);
  p.process(stamped.begin(), stamped.end());
  p.finish("complete", 0, inject::Counters{}, "cuda", "python");
  TraceStore s(db, TraceStore::Mode::ReadOnly);
  return s.load(s.runs().at(0).id);
}

std::vector<Allocation> rows(const Trace& t, int api, int kind) {
  std::vector<Allocation> out;
  for (const Allocation& a : t.allocations)
    if (a.api == api && a.kind == kind) out.push_back(a);
  return out;
}

// A segment and the first block carved from it share their address: both
// must be rows of their own, each closed by its own free, and the allocator's
// segment replaces CUPTI's raw cudaMalloc row for the same memory, while a
// cudaMalloc PyTorch does not see (NCCL, cuBLAS) stays CUPTI's own.
TEST(AllocatorTraceStore, TensorsAndSegmentsAtOneAddressBecomeTheirOwnRows) {
  RecorderSink sink;
  Trace t = recordAndLoad("segments", [&] {
    const uint64_t second = kSegmentAddr + 4 * kMiB;
    // The allocator's cudaMalloc as CUPTI records it, then its trace entry.
    inject::recordAlloc(kSegmentAddr, 20 * kMiB, kCudaMalloc, 0, 0, kSegmentKind, true);
    for (const Entry& e : {entry(Entry::SEGMENT_ALLOC, kSegmentAddr, 20 * kMiB),
                           entry(Entry::ALLOC, kSegmentAddr, 3 * kMiB + 7),
                           entry(Entry::ALLOC, second, 2 * kMiB),
                           entry(Entry::FREE_REQUESTED, kSegmentAddr, 3 * kMiB + 7),
                           entry(Entry::FREE_COMPLETED, kSegmentAddr, 3 * kMiB + 7),
                           entry(Entry::FREE_REQUESTED, second, 2 * kMiB)})
      deliver(recordOf(e), sink, true);
    inject::recordAlloc(0x7f3000000000, 64 * kMiB, kCudaMalloc, 0, 0, kSegmentKind, true);  // NCCL
    // empty_cache(): cudaFree (CUPTI, before the real free), then SEGMENT_FREE.
    inject::recordFree(kSegmentAddr, 0, 0, kSegmentKind);
    deliver(recordOf(entry(Entry::SEGMENT_FREE, kSegmentAddr, 20 * kMiB)), sink, true);
  });
  auto tensors = rows(t, inject::kApiC10CachingAllocator, kTensorKind);
  auto segments = rows(t, inject::kApiC10CachingAllocator, kSegmentKind);
  auto raw = rows(t, kCudaMalloc, kSegmentKind);
  ASSERT_EQ(tensors.size(), 2u) << "a tensor at its segment's address was lost";
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_EQ(raw.size(), 1u) << "the allocator's segment is counted twice (CUPTI and c10)";
  EXPECT_EQ(raw[0].bytes, static_cast<Bytes>(64 * kMiB));
  EXPECT_EQ(raw[0].free, -1);
  EXPECT_EQ(segments[0].bytes, static_cast<Bytes>(20 * kMiB));
  EXPECT_EQ(t.contextOf(segments[0]).stream, 0x51);
  EXPECT_TRUE(segments[0].freed());
  std::sort(tensors.begin(), tensors.end(), [](auto& a, auto& b) { return a.addr < b.addr; });
  EXPECT_EQ(tensors[0].addr, kSegmentAddr);
  EXPECT_EQ(tensors[0].bytes, static_cast<Bytes>(3 * kMiB + 7));
  EXPECT_TRUE(tensors[0].freed());
  EXPECT_TRUE(tensors[1].freed());
  // The tensor's free did not close the segment, nor the other way round.
  EXPECT_LT(tensors[0].free, segments[0].free);
  EXPECT_EQ(t.run.unmatched_frees, 0);
}

// Without CUPTI (or with its cudaMalloc not seen) the allocator's own
// segment free closes the segment.
TEST(AllocatorTraceStore, TheAllocatorsSegmentFreeClosesItsSegment) {
  RecorderSink sink;
  Trace t = recordAndLoad("alone", [&] {
    for (const Entry& e : {entry(Entry::SEGMENT_ALLOC, kSegmentAddr, 2 * kMiB),
                           entry(Entry::ALLOC, kSegmentAddr, 512),
                           entry(Entry::SEGMENT_FREE, kSegmentAddr, 2 * kMiB)})
      deliver(recordOf(e), sink, true);
  });
  auto segments = rows(t, inject::kApiC10CachingAllocator, kSegmentKind);
  auto tensors = rows(t, inject::kApiC10CachingAllocator, kTensorKind);
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_EQ(tensors.size(), 1u);
  EXPECT_TRUE(segments[0].freed());
  EXPECT_FALSE(tensors[0].freed()) << "a segment's free closed the tensor at its address";
}

}  // namespace
}  // namespace gcprof::allocator_trace

// PyTorch's caching allocator events (real c10 TraceEntry objects, built with
// the installed torch's headers) translated into device allocations: tensor
// events as tensors, segment events as segments, FREE_COMPLETED and the rest
// ignored (profiler/allocator_trace/allocator_events.h). No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "allocator_events.h"
#include "c10_record.h"

namespace gcprof::allocator_trace {
namespace {

struct Event {
  std::string what;  // alloc | free
  uint64_t addr;
  int64_t bytes;
  int device;
  int64_t stream;
  int kind;
};

class RecordingSink : public DeviceMemorySink {
 public:
  std::vector<Event> events;
  void allocate(uint64_t addr, int64_t bytes, int device, int64_t stream, int kind) override {
    events.push_back({"alloc", addr, bytes, device, stream, kind});
  }
  void release(uint64_t addr, int device, int kind) override { events.push_back({"free", addr, 0, device, 0, kind}); }
};

using Entry = c10::CachingDeviceAllocator::TraceEntry;

Entry entry(Entry::Action action, c10::DeviceIndex device, size_t addr, size_t size, uintptr_t stream) {
  return Entry(action, device, addr, size, reinterpret_cast<void*>(stream), c10::MempoolId_t{0, 0}, 0);
}

TEST(CuptiAllocatorTrace, TensorAndSegmentEventsBecomeDeviceAllocations) {
  RecordingSink sink;
  const size_t MiB = 1 << 20;
  std::vector<Entry> trace = {
      entry(Entry::SEGMENT_ALLOC, 1, 0x7f0000000000, 20 * MiB, 0x51),
      entry(Entry::ALLOC, 1, 0x7f0000000000, 3 * MiB + 7, 0x51),
      entry(Entry::FREE_REQUESTED, 1, 0x7f0000000000, 3 * MiB + 7, 0x51),
      entry(Entry::FREE_COMPLETED, 1, 0x7f0000000000, 3 * MiB + 7, 0x51),
      entry(Entry::SEGMENT_MAP, 1, 0x7e0000000000, 20 * MiB, 0x51),
      entry(Entry::SEGMENT_UNMAP, 1, 0x7e0000000000, 20 * MiB, 0x51),
      entry(Entry::SEGMENT_FREE, 1, 0x7f0000000000, 20 * MiB, 0x51),
      entry(Entry::SNAPSHOT, 0, 0, 0, 0),
      entry(Entry::OOM, 1, 1 << 30, 64 * MiB, 0x51),
  };
  int delivered = 0;
  for (const Entry& e : trace) delivered += deliver(recordOf(e), sink, true);
  EXPECT_EQ(delivered, 6);
  ASSERT_EQ(sink.events.size(), 6u);
  // The requested size, the stream and the device as the allocator gave them.
  EXPECT_EQ(sink.events[1].what, "alloc");
  EXPECT_EQ(sink.events[1].bytes, static_cast<int64_t>(3 * MiB + 7));
  EXPECT_EQ(sink.events[1].kind, kTensor);
  EXPECT_EQ(sink.events[1].device, 1);
  EXPECT_EQ(sink.events[1].stream, 0x51);
  // Freed when requested (allocated bytes drop there), not when completed.
  EXPECT_EQ(sink.events[2].what, "free");
  EXPECT_EQ(sink.events[2].kind, kTensor);
  EXPECT_EQ(sink.events[0].kind, kSegment);
  EXPECT_EQ(sink.events[0].bytes, static_cast<int64_t>(20 * MiB));
  EXPECT_EQ(sink.events[3].what, "alloc");  // SEGMENT_MAP: a mapping of an expandable segment
  EXPECT_EQ(sink.events[3].kind, kSegment);
  EXPECT_EQ(sink.events[4].what, "free");
  EXPECT_EQ(sink.events[5].what, "free");
  EXPECT_EQ(sink.events[5].addr, 0x7f0000000000u);
}

TEST(CuptiAllocatorTrace, SegmentsCanBeLeftToCupti) {
  RecordingSink sink;
  EXPECT_FALSE(deliver(recordOf(entry(Entry::SEGMENT_ALLOC, 0, 0x1000, 2 << 20, 0)), sink, false));
  EXPECT_TRUE(deliver(recordOf(entry(Entry::ALLOC, 0, 0x1000, 512, 0)), sink, false));
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0].kind, kTensor);
}

}  // namespace
}  // namespace gcprof::allocator_trace

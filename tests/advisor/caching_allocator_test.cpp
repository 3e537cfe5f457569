// The caching allocator model on sequences worked out by hand from the
// policy of c10/cuda/CUDACachingAllocator.cpp (simulate/caching_allocator.h
// names each rule).
#include "simulate/caching_allocator.h"

#include <gtest/gtest.h>

namespace gcprof::advisor {
namespace {

constexpr Bytes KiB = 1024, MiB = 1024 * 1024;

TEST(CachingAllocator, RoundsTo512ByteBlocks) {
  AllocatorSettings s;
  EXPECT_EQ(CachingAllocatorModel::roundSize(0, s), 512);
  EXPECT_EQ(CachingAllocatorModel::roundSize(1, s), 512);
  EXPECT_EQ(CachingAllocatorModel::roundSize(512, s), 512);
  EXPECT_EQ(CachingAllocatorModel::roundSize(513, s), 1024);
  EXPECT_EQ(CachingAllocatorModel::roundSize(3 * MiB + 1, s), 3 * MiB + 512);
}

TEST(CachingAllocator, RoundsToPowerOfTwoDivisions) {
  // 4 divisions between 1 MiB and 2 MiB: 1, 1.25, 1.5, 1.75 MiB.
  AllocatorSettings s = AllocatorSettings::parse("roundup_power2_divisions:4");
  EXPECT_EQ(CachingAllocatorModel::roundSize(1200 * KiB, s), 1280 * KiB);
  EXPECT_EQ(CachingAllocatorModel::roundSize(1280 * KiB, s), 1280 * KiB);
  EXPECT_EQ(CachingAllocatorModel::roundSize(2 * MiB, s), 2 * MiB);  // a power of two stays
  // Only sizes above 512 x divisions are rounded by divisions.
  EXPECT_EQ(CachingAllocatorModel::roundSize(1500, s), 1536);
  EXPECT_EQ(CachingAllocatorModel::roundSize(2049, s), 2560);  // 2048 + 2048/4
}

TEST(CachingAllocator, SegmentSizesByPool) {
  EXPECT_EQ(CachingAllocatorModel::segmentSize(512), 2 * MiB);
  EXPECT_EQ(CachingAllocatorModel::segmentSize(1 * MiB), 2 * MiB);         // small pool
  EXPECT_EQ(CachingAllocatorModel::segmentSize(1 * MiB + 512), 20 * MiB);  // large, under 10 MiB
  EXPECT_EQ(CachingAllocatorModel::segmentSize(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(CachingAllocatorModel::segmentSize(10 * MiB), 10 * MiB);
  EXPECT_EQ(CachingAllocatorModel::segmentSize(11 * MiB + 512), 12 * MiB);  // 2 MiB multiples
}

TEST(CachingAllocator, SmallRequestsShareTwoMiBSegments) {
  CachingAllocatorModel m;
  for (int i = 0; i < 4; ++i) m.malloc(512 * KiB, 0);
  EXPECT_EQ(m.reserved(), 2 * MiB);
  EXPECT_EQ(m.allocated(), 2 * MiB);
  m.malloc(100, 0);  // 512 bytes: a second segment
  EXPECT_EQ(m.reserved(), 4 * MiB);
  EXPECT_EQ(m.allocated(), 2 * MiB + 512);
  EXPECT_EQ(m.segmentsCreated(), 2);
}

TEST(CachingAllocator, LargeRequestsUnderTenMiBShareTwentyMiBSegments) {
  CachingAllocatorModel m;
  for (int i = 0; i < 6; ++i) m.malloc(3 * MiB, 0);  // 18 MiB of one 20 MiB segment
  EXPECT_EQ(m.reserved(), 20 * MiB);
  m.malloc(3 * MiB, 0);  // 2 MiB left: too small
  EXPECT_EQ(m.reserved(), 40 * MiB);
  EXPECT_EQ(m.allocated(), 21 * MiB);
}

TEST(CachingAllocator, LargeBlocksKeepRemaindersOfOneMiBOrLess) {
  CachingAllocatorModel m;
  auto a = m.malloc(12 * MiB, 0);  // its own 12 MiB segment
  m.free(a);
  auto b = m.malloc(11 * MiB + 512 * KiB, 0);  // 512 KiB left over: not split
  EXPECT_EQ(m.reserved(), 12 * MiB);
  EXPECT_EQ(m.allocated(), 12 * MiB);  // torch counts the whole block
  EXPECT_EQ(m.blockSize(b), 12 * MiB);
}

TEST(CachingAllocator, BlocksAreReusedOnTheirStreamOnly) {
  CachingAllocatorModel m;
  m.free(m.malloc(1 * MiB, 1));
  m.malloc(1 * MiB, 2);
  EXPECT_EQ(m.reserved(), 4 * MiB);
  m.malloc(1 * MiB, 1);  // the cached block of stream 1
  EXPECT_EQ(m.reserved(), 4 * MiB);
}

TEST(CachingAllocator, FreedNeighboursMerge) {
  CachingAllocatorModel m;
  auto a = m.malloc(8 * MiB, 0);  // 20 MiB segment: a | 12 MiB free
  auto b = m.malloc(8 * MiB, 0);  // a | b | 4 MiB free
  m.free(a);
  m.free(b);  // one free 20 MiB block again
  m.malloc(18 * MiB, 0);
  EXPECT_EQ(m.reserved(), 20 * MiB);
}

TEST(CachingAllocator, FragmentationCostsANewSegment) {
  CachingAllocatorModel m;
  auto a = m.malloc(8 * MiB, 0);
  m.malloc(8 * MiB, 0);
  m.free(a);                 // 8 MiB and 4 MiB free, not adjacent
  m.malloc(10 * MiB, 0);     // fits neither: a 10 MiB segment
  EXPECT_EQ(m.reserved(), 30 * MiB);
  EXPECT_EQ(m.allocated(), 18 * MiB);
  EXPECT_EQ(m.peakAllocated(), 18 * MiB);
}

TEST(CachingAllocator, BestFitTakesTheSmallestBlockThatFits) {
  CachingAllocatorModel m;
  auto a = m.malloc(12 * MiB, 0);
  auto b = m.malloc(16 * MiB, 0);
  m.free(a);
  m.free(b);
  m.malloc(11 * MiB, 0);  // the 12 MiB block (not split: 1 MiB left)
  m.malloc(15 * MiB, 0);  // the 16 MiB one
  EXPECT_EQ(m.reserved(), 28 * MiB);
}

TEST(CachingAllocator, MaxSplitSizeKeepsLargeBlocksWhole) {
  CachingAllocatorModel m(AllocatorSettings::parse("max_split_size_mb:20"));
  m.free(m.malloc(24 * MiB, 0));
  m.malloc(4 * MiB, 0);  // may not take the 24 MiB block: a 20 MiB segment
  EXPECT_EQ(m.reserved(), 44 * MiB);
  m.free(m.malloc(40 * MiB, 0));
  auto c = m.malloc(22 * MiB, 0);  // the 24 MiB block, within 20 MiB of the request, unsplit
  EXPECT_EQ(m.blockSize(c), 24 * MiB);
  EXPECT_EQ(m.reserved(), 84 * MiB);
  m.malloc(22 * MiB, 0);  // the 40 MiB block is 18 MiB too large... and within 20 MiB: taken
  EXPECT_EQ(m.reserved(), 84 * MiB);
  m.malloc(21 * MiB, 0);  // nothing cached: a new 22 MiB segment
  EXPECT_EQ(m.reserved(), 106 * MiB);
}

TEST(CachingAllocator, OversizeBlocksAreNotHandedToMuchSmallerLargeRequests) {
  CachingAllocatorModel m(AllocatorSettings::parse("max_split_size_mb:20"));
  m.free(m.malloc(64 * MiB, 0));
  m.malloc(30 * MiB, 0);  // 64 >= 30 + 20: a new 30 MiB segment
  EXPECT_EQ(m.reserved(), 94 * MiB);
}

TEST(CachingAllocator, ExpandableSegmentsGrowByPages) {
  CachingAllocatorModel m(AllocatorSettings::parse("expandable_segments:True"));
  m.malloc(3 * MiB, 0);   // one 20 MiB page: 3 MiB used, 17 MiB free before the tail
  EXPECT_EQ(m.reserved(), 20 * MiB);
  m.malloc(18 * MiB, 0);  // the free 17 MiB grows by one more page
  EXPECT_EQ(m.reserved(), 40 * MiB);
  EXPECT_EQ(m.allocated(), 21 * MiB);
  m.malloc(512 * KiB, 0);  // the small pool has its own segment, 2 MiB pages
  EXPECT_EQ(m.reserved(), 42 * MiB);
  m.malloc(19 * MiB, 0);  // 19 MiB free at the end: fits without mapping
  EXPECT_EQ(m.reserved(), 42 * MiB);
}

TEST(CachingAllocator, ExpandableBestFitPrefersBlocksAwayFromTheEnd) {
  CachingAllocatorModel m(AllocatorSettings::parse("expandable_segments:True"));
  auto a = m.malloc(5 * MiB, 0);  // [a 5][15 free] in one 20 MiB page
  m.malloc(12 * MiB, 0);          // [a 5][b 12][3 free | tail]
  m.free(a);                      // [5 free][b 12][3 free | tail]
  m.malloc(2 * MiB, 0);           // the 5 MiB block, though the 3 MiB one is smaller
  EXPECT_EQ(m.reserved(), 20 * MiB);
  m.malloc(3 * MiB + 512 * KiB, 0);  // fits neither 3 MiB block: the end grows
  EXPECT_EQ(m.reserved(), 40 * MiB);
}

TEST(CachingAllocator, ExpandableSegmentsSplitAnyRemainder) {
  CachingAllocatorModel m(AllocatorSettings::parse("expandable_segments:True"));
  auto a = m.malloc(12 * MiB, 0);
  m.free(a);
  auto b = m.malloc(11 * MiB + 512 * KiB, 0);  // 512 KiB left: split here, unlike plain segments
  EXPECT_EQ(m.blockSize(b), 11 * MiB + 512 * KiB);
}

TEST(CachingAllocator, FreeOfABlockNotAllocatedFails) {
  CachingAllocatorModel m;
  auto a = m.malloc(1 * MiB, 0);
  m.free(a);
  EXPECT_THROW(m.free(a), std::invalid_argument);
}

TEST(AllocatorSettings, ParsesTheJobsConfiguration) {
  AllocatorSettings s = AllocatorSettings::parse(
      "expandable_segments:True, max_split_size_mb:128,roundup_power2_divisions:[256:1,512:2,>:8],"
      "garbage_collection_threshold:0.6,pinned_use_cuda_host_register:True");
  EXPECT_TRUE(s.native);
  EXPECT_TRUE(s.expandable_segments);
  EXPECT_EQ(s.max_split_size, 128 * MiB);
  EXPECT_EQ(s.divisionsFor(100 * MiB), 1u);   // below the first interval: its value
  EXPECT_EQ(s.divisionsFor(256 * MiB), 1u);
  // c10 fills `>` from the last listed interval on, that one included
  // (parseRoundUpPower2Divisions), so 512 MiB gets 8, not 2.
  EXPECT_EQ(s.divisionsFor(600 * MiB), 8u);
  EXPECT_EQ(s.divisionsFor(2048 * MiB), 8u);
  EXPECT_DOUBLE_EQ(s.garbage_collection_threshold, 0.6);
  EXPECT_FALSE(AllocatorSettings::parse("backend:cudaMallocAsync").native);
  AllocatorSettings d = AllocatorSettings::parse("");
  EXPECT_FALSE(d.expandable_segments);
  EXPECT_EQ(d.divisionsFor(1 * MiB), 0u);
}

TEST(AllocatorSettings, SaysWhatIsWrong) {
  try {
    AllocatorSettings::parse("max_split_size_mb:10");
    FAIL() << "accepted a split size under 20 MiB";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max_split_size_mb must be at least 20"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AllocatorSettings::parse("roundup_power2_divisions:3"), std::invalid_argument);
  EXPECT_THROW(AllocatorSettings::parse("expandable_segments:yes"), std::invalid_argument);
  EXPECT_THROW(AllocatorSettings::parse("backend:magic"), std::invalid_argument);
}

TEST(AllocatorSettings, FromTheRecordedEnvironment) {
  EXPECT_TRUE(AllocatorSettings::fromRunEnvironment(R"({"PYTORCH_CUDA_ALLOC_CONF":"expandable_segments:True"})")
                  .expandable_segments);
  EXPECT_TRUE(AllocatorSettings::fromRunEnvironment(R"({"OMP_NUM_THREADS":"1"})").native);
  EXPECT_TRUE(AllocatorSettings::fromRunEnvironment("").native);
}

}  // namespace
}  // namespace gcprof::advisor

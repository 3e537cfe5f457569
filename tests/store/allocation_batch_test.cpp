// parseBatch's numbers, summed digit by digit up to 18 digits and left to
// std::from_chars past that: every length, sign and place in the text reads
// as from_chars alone reads it.
#include "allocation_batch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace gcprof {
namespace {

// A value of `digits` digits (1-19), its sign from `rng`.
int64_t valueOf(std::mt19937_64& rng, int digits) {
  uint64_t v = rng() % 9 + 1;
  for (int i = 1; i < digits; ++i) v = v * 10 + rng() % 10;
  if (digits == 19) v %= uint64_t{INT64_MAX};
  return rng() % 2 ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

TEST(AllocationBatch, EveryLengthAndSignReadsBackAtEveryPlace) {
  std::mt19937_64 rng(3);
  std::string text;
  beginBatch(text);
  std::vector<RecordedAllocation> written;
  const BatchBase base{0, 0};
  for (int row = 0; row < 4000; ++row) {
    RecordedAllocation a;
    a.id = row;
    a.addr = static_cast<uint64_t>(valueOf(rng, static_cast<int>(rng() % 19) + 1));
    a.bytes = valueOf(rng, static_cast<int>(rng() % 19) + 1);
    a.stream = valueOf(rng, static_cast<int>(rng() % 19) + 1);
    a.thread = valueOf(rng, static_cast<int>(rng() % 19) + 1);
    a.alloc = std::abs(valueOf(rng, static_cast<int>(rng() % 12) + 1));
    a.free = rng() % 3 ? a.alloc + std::abs(valueOf(rng, static_cast<int>(rng() % 12) + 1)) : -1;
    a.range = static_cast<int32_t>(rng() % 100000);
    a.step = static_cast<int32_t>(rng() % 2000) - 1;
    ASSERT_TRUE(appendToBatch(text, base, a));
    written.push_back(a);
  }
  closeBatch(text);
  std::vector<RecordedAllocation> read;
  std::string problem;
  ASSERT_TRUE(parseBatch(text, base, read, problem)) << problem;
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) {
    ASSERT_EQ(read[i].addr, written[i].addr) << i;
    ASSERT_EQ(read[i].bytes, written[i].bytes) << i;
    ASSERT_EQ(read[i].stream, written[i].stream) << i;
    ASSERT_EQ(read[i].thread, written[i].thread) << i;
    ASSERT_EQ(read[i].alloc, written[i].alloc) << i;
    ASSERT_EQ(read[i].free, written[i].free) << i;
    ASSERT_EQ(read[i].range, written[i].range) << i;
    ASSERT_EQ(read[i].step, written[i].step) << i;
  }
  // As the loader reads it: every row's stream and thread kept in the table
  // (here nearly one pair a row: a table far from the few a run has).
  AllocationBlocks blocks;
  AllocationContexts contexts;
  ASSERT_TRUE(parseBatch(text, base, blocks, contexts, problem)) << problem;
  ASSERT_EQ(blocks.size(), written.size());
  EXPECT_GT(contexts.size(), written.size() / 2);
  for (size_t i = 0; i < blocks.size(); ++i) {
    ASSERT_EQ(contexts[blocks[i].context].stream, written[i].stream) << i;
    ASSERT_EQ(contexts[blocks[i].context].thread, written[i].thread) << i;
    ASSERT_EQ(blocks[i].alloc, written[i].alloc) << i;
  }
}

// What from_chars takes (leading zeros, any length of them) is taken; what
// it refuses (past int64, a sign alone, a plus) is refused where it starts.
TEST(AllocationBatch, NumbersFromCharsRefusesAreRefused) {
  const BatchBase base{0, 0};
  std::vector<RecordedAllocation> out;
  std::string problem;
  const std::string zeros(30, '0');
  ASSERT_TRUE(parseBatch("[[0," + zeros + "7,-" + zeros + "12345678912,0,0,0,0,0,-1,0,0,0]]", base, out, problem))
      << problem;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].addr, 7u);
  EXPECT_EQ(out[0].bytes, -12345678912);
  for (const char* number : {"9223372036854775808", "-9223372036854775809", "123456789012345678901", "-",
                                    "+5", "-x"}) {
    const std::string text = "[[0," + std::string(number) + ",0,0,0,0,0,0,-1,0,0,0]]";
    problem.clear();
    EXPECT_FALSE(parseBatch(text, base, out, problem)) << text;
    EXPECT_EQ(problem, "expected an integer at byte 4") << text;
  }
  EXPECT_TRUE(parseBatch("[[0,9223372036854775807,-9223372036854775808,0,0,0,0,0,-1,0,0,0]]", base, out, problem))
      << problem;
  EXPECT_EQ(out.back().bytes, INT64_MIN);
}

// A batch cut short anywhere, as a view into the whole text: refused,
// and never read past its end (the text beyond it is valid and would be
// taken by a parser that did).
TEST(AllocationBatch, CutShortIsRefusedWithinItsText) {
  const std::string whole = "[[0,140234567890123,-4096,0,7,12,1,5,-1,3,2,0],[1,99,8,0,0,0,0,6,10,0,0,1]]";
  for (size_t cut = 0; cut < whole.size(); ++cut) {
    std::vector<RecordedAllocation> out;
    std::string problem;
    EXPECT_FALSE(parseBatch(std::string_view(whole.data(), cut), BatchBase{0, 0}, out, problem)) << cut;
    const size_t at = problem.rfind(' ');
    ASSERT_NE(at, std::string::npos) << problem;
    EXPECT_LE(std::stoul(problem.substr(at + 1)), cut) << cut << ": " << problem;
  }
}

}  // namespace
}  // namespace gcprof

// A trace's table of (stream, thread) pairs: each pair gets one number, kept
// for the run, and gives back its values whole; a row built without a table
// reads as stream 0, thread 0.
#include "allocation_contexts.h"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "trace.h"

namespace gcprof {
namespace {

TEST(AllocationContexts, ARowBuiltByHandIsOnStreamZeroThreadZero) {
  Trace t;
  Allocation a;
  EXPECT_EQ(t.contextOf(a).stream, 0);
  EXPECT_EQ(t.contextOf(a).thread, 0);
  EXPECT_EQ(t.contexts.intern({0, 0}), a.context);
  EXPECT_EQ(t.contexts.size(), 1u);
}

TEST(AllocationContexts, APairKeepsItsNumberWhateverCameBetween) {
  AllocationContexts c;
  const uint32_t main = c.intern({7, 100});
  const uint32_t backward = c.intern({7, 101});
  const uint32_t other_stream = c.intern({8, 100});
  EXPECT_NE(main, backward);
  EXPECT_NE(main, other_stream);
  EXPECT_NE(backward, other_stream);
  // Asked again out of order, and twice in a row.
  EXPECT_EQ(c.intern({7, 101}), backward);
  EXPECT_EQ(c.intern({7, 100}), main);
  EXPECT_EQ(c.intern({7, 100}), main);
  EXPECT_EQ(c.intern({8, 100}), other_stream);
  EXPECT_EQ(c.size(), 4u);  // the three and the default
  EXPECT_EQ(c[backward].stream, 7);
  EXPECT_EQ(c[backward].thread, 101);
  EXPECT_EQ(c[other_stream].stream, 8);
}

// A thread id is whatever the recorder saw (a pthread_t is an address), a
// stream a cudaStream_t: every bit is kept.
TEST(AllocationContexts, ValuesAreKeptWhole) {
  AllocationContexts c;
  const uint32_t lo = c.intern({INT64_MIN, INT64_MAX});
  const uint32_t hi = c.intern({INT64_MAX, INT64_MIN});
  const uint32_t pthread = c.intern({0x7f3a1c2d4000, 0x7f3a1c2d4700});
  EXPECT_EQ(c[lo].stream, INT64_MIN);
  EXPECT_EQ(c[lo].thread, INT64_MAX);
  EXPECT_EQ(c[hi].stream, INT64_MAX);
  EXPECT_EQ(c[hi].thread, INT64_MIN);
  EXPECT_EQ(c[pthread].thread, 0x7f3a1c2d4700);
}

// A job that starts a thread per batch over a long run: many pairs, each its
// own number, each found again.
TEST(AllocationContexts, ManyStreamsAndThreadsEachKeepTheirOwn) {
  AllocationContexts c;
  std::vector<uint32_t> number;
  for (int64_t thread = 0; thread < 20000; ++thread)
    for (int64_t stream = 0; stream < 4; ++stream) number.push_back(c.intern({stream, 1000 + thread}));
  EXPECT_EQ(c.size(), 80001u);
  size_t i = 0;
  for (int64_t thread = 0; thread < 20000; ++thread) {
    for (int64_t stream = 0; stream < 4; ++stream, ++i) {
      ASSERT_EQ(c[number[i]].stream, stream);
      ASSERT_EQ(c[number[i]].thread, 1000 + thread);
    }
  }
  for (int64_t thread = 19999; thread >= 0; thread -= 997)
    EXPECT_EQ(c.intern({3, 1000 + thread}), number[static_cast<size_t>(thread) * 4 + 3]);
  EXPECT_EQ(c.size(), 80001u);
}

}  // namespace
}  // namespace gcprof

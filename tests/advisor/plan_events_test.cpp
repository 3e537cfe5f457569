#include "simulate/plan_events.h"

#include <gtest/gtest.h>

#include <climits>
#include <deque>

namespace gcprof::advisor {
namespace {

// StepEvents hands the step's events over merged from its runs: the same
// order as sorting them all together, which the simulator walked before.
class StepEventsOrder : public ::testing::Test {
 protected:
  const Allocation* row(Bytes bytes) {
    Allocation a;
    a.id = static_cast<int64_t>(rows_.size()) + 1;
    a.bytes = bytes;
    rows_.push_back(a);
    return &rows_.back();
  }
  // A replay at `anchor`: re-made allocations at offsets `rels` (their
  // order as made), each freed at rel + 5, and the marker ending it.
  void replay(StepEvents& made, std::vector<SimEvent>& all, Ns anchor, uint8_t phase, std::vector<Ns> rels) {
    for (Ns rel : rels) {
      const Allocation* a = row(100 + rel % 7);
      SimEvent in{anchor, rel, a->bytes, 0, phase, a}, out{anchor, rel + 5, -a->bytes, 0, phase, a};
      made.remade(in);
      made.replay(out);
      all.push_back(in);
      all.push_back(out);
    }
    SimEvent end{anchor, LLONG_MAX, 0, 1, phase, nullptr};
    made.replay(end);
    made.endReplay();
    all.push_back(end);
  }
  void loose(StepEvents& made, std::vector<SimEvent>& all, Ns time, uint8_t phase) {
    const Allocation* a = row(64);
    SimEvent e{time, 0, -a->bytes, 0, phase, a};
    made.add(e);
    all.push_back(e);
  }
  static void expectSameOrder(const std::vector<SimEvent>& got, std::vector<SimEvent> want) {
    sortInTimeOrder(want);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].time, want[i].time) << i;
      EXPECT_EQ(got[i].phase, want[i].phase) << i;
      EXPECT_EQ(got[i].rel, want[i].rel) << i;
      EXPECT_EQ(got[i].delta, want[i].delta) << i;
      EXPECT_EQ(got[i].src, want[i].src) << i;
      EXPECT_EQ(got[i].shift, want[i].shift) << i;
    }
  }
  std::deque<Allocation> rows_;  // stable addresses
};

TEST_F(StepEventsOrder, ReplaysAndLooseEventsMergeAsOneSort) {
  StepEvents made;
  std::vector<SimEvent> all, out;
  // Segments in forward order replay in backward order: later anchors first.
  replay(made, all, 900, 0, {0, 3, 3, 8});  // two allocations at one instant
  loose(made, all, 900, 1);                 // a drop at a replay's instant, another phase
  replay(made, all, 500, 2, {1, 2, 6});
  loose(made, all, 40, 2);
  loose(made, all, 700, 1);
  EXPECT_TRUE(made.appendSorted(out));
  expectSameOrder(out, all);
}

// Two replays at one instant and phase (units with no time between them)
// interleave: they are sorted with the rest.
TEST_F(StepEventsOrder, TwoReplaysAtOneInstantInterleave) {
  StepEvents made;
  std::vector<SimEvent> all, out;
  replay(made, all, 300, 0, {0, 4, 9});
  replay(made, all, 300, 0, {2, 3});
  loose(made, all, 10, 1);
  EXPECT_TRUE(made.appendSorted(out));
  expectSameOrder(out, all);
}

// Appended after events already there: says whether the whole is in order.
TEST_F(StepEventsOrder, SaysWhenTheAppendedStepGoesBeforeWhatIsThere) {
  StepEvents made;
  std::vector<SimEvent> all, out;
  replay(made, all, 300, 0, {0, 1});
  EXPECT_TRUE(made.appendSorted(out));
  std::vector<SimEvent> later;
  replay(made, later, 400, 0, {0});
  EXPECT_TRUE(made.appendSorted(out));
  std::vector<SimEvent> earlier;
  loose(made, earlier, 200, 1);
  EXPECT_FALSE(made.appendSorted(out));
}

}  // namespace
}  // namespace gcprof::advisor

// gcprof-gui's --run/--plan/--step/--frames checked against the file before a
// window opens: what is not there is refused, naming what is.
#include "start_choice.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include "fabricated_training.h"
#include "trace_store.h"

namespace gcprof::view {
namespace {

class StartChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* ext : {"", "-wal", "-shm"}) std::remove((path_ + ext).c_str());
    testing::TrainingShape shape;  // steps 0-2
    run_ = testing::writeRun(path_, testing::fabricateTraining(shape));
    TraceStore store(path_, TraceStore::Mode::ReadWrite);
    for (int i = 0; i < 2; ++i)
      store.savePlan({0, run_, 1, "optimal", 1 << 30, testing::planJson(run_, shape.layers, {1}, 1 << 30)});
  }
  void TearDown() override {
    for (const char* ext : {"", "-wal", "-shm"}) std::remove((path_ + ext).c_str());
  }

  const std::string path_ = ::testing::TempDir() + "gcprof-gui-start-choice-" + std::to_string(getpid()) + ".db";
  int64_t run_ = 0;
};

TEST_F(StartChoiceTest, WhatTheFileHasPasses) {
  StartChoice c;
  EXPECT_EQ(checkStartChoice(path_, c), "");
  c.plan = 2;
  c.step = 2;
  c.run = run_;
  EXPECT_EQ(checkStartChoice(path_, c), "");
  c.plan = 0;  // no plan shown
  EXPECT_EQ(checkStartChoice(path_, c), "");
}

TEST_F(StartChoiceTest, APlanTheRunLacksNamesThePlansItHas) {
  StartChoice c;
  c.plan = 99;
  EXPECT_EQ(checkStartChoice(path_, c),
            "--plan 99: " + path_ + " has no plan 99 for run 1; it has plans 1, 2");
}

TEST_F(StartChoiceTest, AStepTheRunLacksNamesTheStepsItHas) {
  StartChoice c;
  c.step = 7;
  EXPECT_EQ(checkStartChoice(path_, c), "--step 7: run 1 of " + path_ + " has no step 7; it has steps 0-2");
  c.step = -5;
  EXPECT_EQ(checkStartChoice(path_, c), "--step -5: step indexes are 0 or more");
}

TEST_F(StartChoiceTest, ARunTheFileLacksNamesItsRuns) {
  StartChoice c;
  c.run = 9;
  EXPECT_EQ(checkStartChoice(path_, c), "--run 9: " + path_ + " has no run 9; it has runs 1");
}

TEST_F(StartChoiceTest, NumbersThatCannotBeRightAreRefusedWithoutAFile) {
  StartChoice c;
  c.frames = -1;
  EXPECT_EQ(checkStartNumbers(c), "--frames -1: give 1 to 1000 frames");
  c.frames = 0;
  EXPECT_NE(checkStartNumbers(c), "");
  c.frames = 3;
  c.plan = -2;
  EXPECT_EQ(checkStartNumbers(c), "--plan -2: plan ids are 1 or more (0: show no plan)");
  c.plan.reset();
  c.run = -1;
  EXPECT_NE(checkStartNumbers(c), "");
}

TEST_F(StartChoiceTest, AFileThatIsNoTraceIsLeftToOpeningToExplain) {
  StartChoice c;
  c.plan = 1;
  EXPECT_EQ(checkStartChoice("/nonexistent/trace.db", c), "");
}

TEST(IdRanges, ConsecutiveIdsJoin) {
  EXPECT_EQ(idRanges({}), "none");
  EXPECT_EQ(idRanges({3}), "3");
  EXPECT_EQ(idRanges({1, 2}), "1, 2");
  EXPECT_EQ(idRanges({0, 1, 2, 3, 9}), "0-3, 9");
  EXPECT_EQ(idRanges({7, 1, 3, 5, 6}), "1, 3, 5-7");
  std::vector<int64_t> odd;
  for (int i = 0; i < 40; ++i) odd.push_back(2 * i);
  EXPECT_NE(idRanges(odd).find("(40 in all)"), std::string::npos) << idRanges(odd);
}

}  // namespace
}  // namespace gcprof::view

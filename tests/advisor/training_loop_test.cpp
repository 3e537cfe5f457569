// Steps that are not one clean chain: gradient accumulation (several passes
// per step, split into micro-steps), a unit called several times in one pass
// (refused with a message naming it), and what is resident at a step's start.
#include <gtest/gtest.h>

#include "advice_error.h"
#include "units/resident_memory.h"
#include "units/step_layout.h"
#include "units/unit_selection.h"
#include "simulate/replay_simulator.h"
#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

using testing::TraceBuilder;

const std::vector<std::string> kUnits = {"layers.0", "layers.1"};

// One pass of two units from `t`: F0 [t, t+10), F1, B1, B0, each 10 ns,
// each unit saving `saved` bytes from its forward to its backward.
Ns pass(TraceBuilder& b, Ns t, int64_t step, Bytes saved) {
  b.range("layers.0", Phase::Forward, t, t + 10, step);
  b.range("layers.1", Phase::Forward, t + 10, t + 20, step);
  b.range("layers.1", Phase::Backward, t + 20, t + 30, step);
  b.range("layers.0", Phase::Backward, t + 30, t + 40, step);
  b.alloc(t + 1, t + 35, saved, -1, step);
  b.alloc(t + 11, t + 25, saved, -1, step);
  return t + 40;
}

// Three optimizer steps of two micro-batches each.
TraceBuilder accumulation() {
  TraceBuilder b;
  b.alloc(0, -1, 1000);  // parameters
  Ns t = 100;
  for (int64_t s = 0; s < 3; ++s) {
    Ns start = t;
    t = pass(b, t, s, 100);
    t = pass(b, t + 5, s, 100);
    b.step(s, start, t + 10);
    t += 20;
  }
  return b;
}

TEST(GradientAccumulation, EachPassBecomesAMicroStep) {
  Trace trace = accumulation().build();
  RunLayout layout = stepLayouts(trace, kUnits);
  ASSERT_EQ(layout.steps.size(), 6u);
  EXPECT_EQ(layout.complete, 6u);
  EXPECT_EQ(layout.steps[0].step, 0);
  EXPECT_EQ(layout.steps[1].step, 0);
  EXPECT_EQ(layout.steps[1].start, layout.steps[0].end);
  // The first optimizer step goes whole: the steady micro-steps are steps 1 and 2's.
  EXPECT_EQ(layout.steady, (std::vector<size_t>{2, 3, 4, 5}));
}

TEST(GradientAccumulation, RecomputeAddsUpOverAStepsMicroBatches) {
  Trace trace = accumulation().build();
  RunLayout layout = stepLayouts(trace, kUnits);
  Simulation sim = simulate(trace, hostFilter(), layout, {{0, 0}});
  EXPECT_EQ(sim.recompute_ns, 2 * 10);  // layers.0's forward, once per micro-batch
  // Checkpointing layers.0 frees its 100 bytes during each pass.
  Simulation none = simulate(trace, hostFilter(), layout, {});
  EXPECT_EQ(none.peak - sim.peak, 100);
}

TEST(RepeatedCalls, AUnitCalledTwiceInOnePassIsNamed) {
  TraceBuilder b;
  b.step(0, 0, 100);
  b.range("layers.0", Phase::Forward, 0, 10);
  b.range("layers.1", Phase::Forward, 10, 20);
  b.range("layers.0", Phase::Forward, 20, 30);  // shared: applied again
  b.range("layers.0", Phase::Backward, 30, 40);
  b.range("layers.1", Phase::Backward, 40, 50);
  b.range("layers.0", Phase::Backward, 50, 60);
  RunLayout layout = stepLayouts(b.build(), kUnits);
  ASSERT_EQ(layout.steps.size(), 1u);
  EXPECT_FALSE(layout.steps[0].complete);
  EXPECT_NE(layout.steps[0].problem.find("layers.0 is called 2 times per step"), std::string::npos)
      << layout.steps[0].problem;
  EXPECT_NE(layout.steps[0].problem.find("weight sharing"), std::string::npos);
}

// One loss over two passes of the model (two views of a batch): both
// forwards, then both backwards, the second pass's first. Not micro-steps:
// said in those terms, not as weight sharing.
TEST(RepeatedCalls, TwoPassesHeldAtOnceAreNamedAsSuch) {
  TraceBuilder b;
  b.step(0, 0, 100);
  b.range("layers.0", Phase::Forward, 0, 10);
  b.range("layers.1", Phase::Forward, 10, 20);
  b.range("layers.0", Phase::Forward, 20, 30);
  b.range("layers.1", Phase::Forward, 30, 40);
  b.range("layers.1", Phase::Backward, 40, 50);
  b.range("layers.0", Phase::Backward, 50, 60);
  b.range("layers.1", Phase::Backward, 60, 70);
  b.range("layers.0", Phase::Backward, 70, 80);
  RunLayout layout = stepLayouts(b.build(), kUnits);
  ASSERT_EQ(layout.steps.size(), 1u);
  EXPECT_FALSE(layout.steps[0].complete);
  const std::string& why = layout.steps[0].problem;
  EXPECT_NE(why.find("every unit is called 2 times per step, in 2 forward passes whose backward runs after all of them"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("run the views as one batch"), std::string::npos) << why;
  EXPECT_EQ(why.find("weight sharing"), std::string::npos) << why;
}

TEST(RepeatedCalls, BackToBackCallsAreNotMistakenForAChain) {
  TraceBuilder b;
  b.step(0, 0, 100);
  b.range("layers.0", Phase::Forward, 0, 10);
  b.range("layers.1", Phase::Forward, 10, 20);
  b.range("layers.1", Phase::Forward, 20, 30);  // applied twice in a row
  b.range("layers.1", Phase::Backward, 30, 40);
  b.range("layers.1", Phase::Backward, 40, 50);
  b.range("layers.0", Phase::Backward, 50, 60);
  RunLayout layout = stepLayouts(b.build(), kUnits);
  EXPECT_FALSE(layout.steps[0].complete);
  EXPECT_NE(layout.steps[0].problem.find("layers.1 is called 2 times per step"), std::string::npos)
      << layout.steps[0].problem;
}

TEST(RepeatedCalls, AutoRefusesASharedBlockWhenNothingElseRepeats) {
  std::vector<ModuleStats> modules(3);
  modules[0].name = "";
  modules[0].calls = 1;
  modules[1].name = "encoder.shared";
  modules[1].depth = 2;
  modules[1].calls = 4;
  modules[2].name = "encoder.shared.attn";
  modules[2].depth = 3;
  modules[2].calls = 4;
  for (ModuleStats& m : modules) m.backward_calls = m.calls;
  try {
    selectUnits(modules, "auto");
    FAIL() << "no error";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("encoder.shared is called 4 times per forward pass"),
              std::string::npos)
        << e.what();
  }
}

TEST(ResidentMemory, SortsWhatIsLiveAtTheFirstUnitByOrigin) {
  TraceBuilder b;
  b.alloc(0, -1, 1000);                // parameters, before any step
  Ns t = 100;
  for (int64_t s = 0; s < 2; ++s) {
    Ns start = t;
    b.alloc(t, t + 45, 7, -1, s);      // the batch, born before the first unit
    t = pass(b, t + 2, s, 100);
    b.alloc(t - 15, -1, 30, -1, s);    // a gradient, born in backward and kept
    b.alloc(t + 1, -1, 50, -1, s);     // optimizer state, after the backward
    b.step(s, start, t + 10);
    t += 20;
  }
  Trace trace = b.build();
  RunLayout layout = stepLayouts(trace, kUnits);
  ResidentMemory r = residentMemory(trace, hostFilter(), layout);
  EXPECT_EQ(r.before_training, 1000);
  EXPECT_EQ(r.gradients, 30);
  EXPECT_EQ(r.optimizer, 50);
  EXPECT_EQ(r.this_step, 7);
  EXPECT_EQ(r.total(), 1087);
  EXPECT_NE(r.describe().find("optimizer state"), std::string::npos);
}

TEST(ResidentMemory, AGradientAHeadMakesBeforeTheUnitsBackwardIsAGradient) {
  // torchvision Faster R-CNN: the RoI box head runs after the backbone's
  // blocks, so its backward (and its weight's gradient, kept to the next
  // step) comes before theirs; it was counted as a cache of the forward.
  TraceBuilder b;
  b.alloc(0, -1, 1000);  // parameters
  Ns t = 100;
  std::vector<int64_t> head_backward;
  for (int64_t s = 0; s < 2; ++s) {
    Ns start = t;
    b.range("layers.0", Phase::Forward, t, t + 10, s);
    b.range("layers.1", Phase::Forward, t + 10, t + 20, s);
    b.range("head", Phase::Forward, t + 20, t + 25, s);
    head_backward.push_back(b.range("head", Phase::Backward, t + 26, t + 30, s));
    if (s == 0) b.alloc(t + 27, -1, 40, -1, s);  // the head's weight gradient
    b.alloc(t + 22, -1, 9, -1, s);               // a cache the forward keeps
    b.range("layers.1", Phase::Backward, t + 30, t + 40, s);
    b.range("layers.0", Phase::Backward, t + 40, t + 50, s);
    b.step(s, start, t + 60);
    t += 80;
  }
  Trace trace = b.build();
  for (Allocation& a : trace.allocations)
    if (a.bytes == 40) a.range = head_backward[0];
  RunLayout layout = stepLayouts(trace, kUnits);
  ResidentMemory r = residentMemory(trace, hostFilter(), layout);
  EXPECT_EQ(r.gradients, 40);
  EXPECT_EQ(r.cached, 9);
}

// A validation pass under no_grad after optimizer.step() (model.eval(), the
// forwards only) is recorded with the index of the step that just ended:
// its forwards are not second calls of the units in that step.
TEST(TrainingLoop, ValidationForwardsAfterTheStepEndsAreNotItsCalls) {
  TraceBuilder b;
  b.alloc(0, -1, 1000);
  for (int64_t s = 0; s < 2; ++s) {
    Ns start = 100 + 100 * s;
    Ns end = pass(b, start, s, 100);
    b.step(s, start, end + 5);
    b.range("layers.0", Phase::Forward, end + 10, end + 15, s);  // validation, no backward
    b.range("layers.1", Phase::Forward, end + 15, end + 20, s);
    b.alloc(end + 11, end + 19, 50, -1, s);
  }
  RunLayout layout = stepLayouts(b.build(), kUnits);
  ASSERT_EQ(layout.steps.size(), 2u);
  EXPECT_EQ(layout.complete, 2u) << layout.steps.front().problem;
  EXPECT_EQ(layout.steps[1].units[0].fwd_end, 210);  // the training forward's, not the validation's
}


// A WGAN's iteration is one step: five critic steps each call the generator
// (the units) on fakes they detach, then the generator's step calls it once
// more and runs its backward. The forward-only calls are not the pass.
TEST(TrainingLoop, ForwardOnlyCallsInTheStepAreNotItsCalls) {
  TraceBuilder b;
  b.alloc(0, -1, 1000);
  Ns t = 100, last_pass = 0;
  for (int64_t s = 0; s < 3; ++s) {
    Ns start = t;
    for (int critic = 0; critic < 5; ++critic, t += 30) {
      b.range("layers.0", Phase::Forward, t, t + 10, s);
      b.range("layers.1", Phase::Forward, t + 10, t + 20, s);
      b.alloc(t + 1, t + 19, 100, -1, s);  // freed with the detached graph
    }
    last_pass = t;
    t = pass(b, t, s, 100);
    b.step(s, start, t + 5);
    t += 20;
  }
  Trace trace = b.build();
  RunLayout layout = stepLayouts(trace, kUnits);
  ASSERT_EQ(layout.complete, 3u) << layout.steps.front().problem;
  EXPECT_EQ(layout.steps[2].units[0].fwd_start, last_pass);
  Simulation none = simulate(trace, hostFilter(), layout, {});
  Simulation first = simulate(trace, hostFilter(), layout, {{0, 0}});
  EXPECT_EQ(none.peak - first.peak, 100);  // layers.0's saved bytes, as in one pass
}

}  // namespace
}  // namespace gcprof::advisor

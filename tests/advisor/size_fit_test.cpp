// The what-if fit on fabricated runs whose growth is known exactly: linear,
// affine, quadratic, and runs that are not one job at different sizes.
#include <gtest/gtest.h>

#include <cmath>

#include "chain_run.h"
#include "chain_traces.h"
#include "advice_error.h"
#include "plan/plan_file.h"
#include "scale/chain_scaling.h"
#include "scale/run_size.h"
#include "scale/size_fit.h"
#include "scale/what_if.h"
#include "report/what_if_table.h"
#include "solve/fixed_plans.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;

TEST(SizeFit, LinearHasNoConstantTerm) {
  SizeFit f = fitGrowth({{1, 10}, {3, 30}}, GrowthForm::Affine);
  EXPECT_NEAR(f.c0, 0, 1e-9);
  EXPECT_NEAR(f.c1, 10, 1e-9);
  EXPECT_NEAR(f.at(16), 160, 1e-9);
}

TEST(SizeFit, AffineThroughTwoRuns) {
  SizeFit f = fitGrowth({{2, 100}, {4, 180}}, GrowthForm::Affine);
  EXPECT_NEAR(f.at(16), 660, 1e-9);
  EXPECT_NEAR(f.c2, 0, 1e-12);
}

TEST(SizeFit, QuadraticIsDetectedOnlyWhenTheDataNeedsIt) {
  auto q = [](double s) { return 5 + 2 * s + 3 * s * s; };
  std::vector<SizePoint> curved = {{128, q(128)}, {256, q(256)}, {512, q(512)}};
  EXPECT_EQ(growthFormOf(curved), GrowthForm::Quadratic);
  SizeFit f = fitGrowth(curved, GrowthForm::Quadratic);
  EXPECT_NEAR(f.at(2048) / q(2048), 1.0, 1e-9);
  std::vector<SizePoint> straight = {{2, 100}, {4, 180}, {8, 340}};
  EXPECT_EQ(growthFormOf(straight), GrowthForm::Affine);
  EXPECT_EQ(growthFormOf({{2, 100}, {4, 180}}), GrowthForm::Affine);  // two sizes: a line
}

TEST(SizeFit, BytesFollowTheTwoLargestOfThreeSizesAndTheSmallestChecksThem) {
  // 40 bytes per size from 4 on; the smallest size holds 30 bytes more (a
  // workspace the larger sizes outgrow, the warm-up step's extras).
  std::vector<SizePoint> bent = {{2, 130}, {4, 180}, {8, 340}};
  SizeFit f = fitBytes(bent, GrowthForm::Affine);
  EXPECT_NEAR(f.at(16), 660, 1e-9);
  EXPECT_NEAR(f.at(32), 1300, 1e-9);
  // Least squares through all three would bend the line: 621 at 16.
  EXPECT_LT(fitGrowth(bent, GrowthForm::Affine).at(16), 640);
  FitResidual r = fitResidual(bent, f);
  EXPECT_DOUBLE_EQ(r.size, 2);
  EXPECT_NEAR(r.miss, 30, 1e-9);
  EXPECT_DOUBLE_EQ(r.value, 130);
  // Two sizes: the line through both; a quadratic: every size.
  EXPECT_NEAR(fitBytes({{2, 100}, {4, 180}}, GrowthForm::Affine).at(16), 660, 1e-9);
  auto q = [](double s) { return 5 + 2 * s + 3 * s * s; };
  std::vector<SizePoint> curved = {{2, q(2)}, {4, q(4)}, {8, q(8)}};
  EXPECT_NEAR(fitBytes(curved, GrowthForm::Quadratic).at(32), q(32), 1e-6);
  EXPECT_NEAR(fitResidual(curved, fitBytes(curved, GrowthForm::Quadratic)).miss, 0, 1e-6);
}

TEST(SizeFit, StepTimeGrowsPastANoisySmallRecording) {
  // Batch 4 recorded on a busy machine, slower than batch 8: the step time
  // at 8 is still 8's, and larger batches take longer (not batch 4's time
  // at every size).
  std::vector<SizePoint> noisy = {{4, 2000}, {8, 500}};
  TimeFit t = fitTime(noisy, GrowthForm::Affine);
  EXPECT_TRUE(t.proportional);
  EXPECT_DOUBLE_EQ(t.at(8), 500);
  EXPECT_DOUBLE_EQ(t.at(24), 1500);
  EXPECT_LT(t.at(16), t.at(24));
  EXPECT_DOUBLE_EQ(timeAt(noisy, GrowthForm::Affine, 24), 1500);
  // Times that grow are fitted as they are.
  TimeFit line = fitTime({{2, 100}, {4, 200}}, GrowthForm::Affine);
  EXPECT_FALSE(line.proportional);
  EXPECT_DOUBLE_EQ(line.at(16), 800);
  EXPECT_EQ(line.sizes, 2u);
  EXPECT_DOUBLE_EQ(line.residual.miss, 0);  // through both: unchecked
}

TEST(SizeFit, StepTimeFitSaysHowFarItIsFromTheRecordedSizes) {
  // Least squares over every size: one run's noise is not passed through.
  std::vector<SizePoint> points = {{2, 230}, {4, 400}, {8, 800}};
  TimeFit t = fitTime(points, GrowthForm::Affine);
  EXPECT_EQ(t.sizes, 3u);
  EXPECT_FALSE(t.proportional);
  EXPECT_GT(t.residual.miss, 0);
  EXPECT_GT(t.residualFraction(), 0.01);
  EXPECT_LT(t.residualFraction(), 0.2);
  EXPECT_GT(t.at(16), t.at(8));
  // A parabola bending down would fall at large sizes: a line instead.
  TimeFit bent = fitTime({{2, 100}, {4, 300}, {8, 400}}, GrowthForm::Quadratic);
  EXPECT_GE(bent.fit.c2, 0);
  EXPECT_GT(bent.at(64), bent.at(8));
}

TEST(WhatIf, SaysWhenTheRecordedStepTimesDoNotGrow) {
  nlohmann::json w = {{"size_name", "batch"},
                      {"runs", {{{"run", 1}, {"size", 4}}, {{"run", 2}, {"size", 8}}}},
                      {"step_time_fit",
                       {{"sizes", 2},
                        {"proportional", true},
                        {"recorded", {{{"size", 4}, {"step_ns", 2000000000}}, {{"size", 8}, {"step_ns", 500000000}}}}}}};
  std::vector<std::string> notes = whatIfNotes(w);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("do not grow with batch (batch=4: 2000.0 ms, batch=8: 500.0 ms)"), std::string::npos)
      << notes[1];
  EXPECT_NE(notes[1].find("batch=8's in proportion to the size"), std::string::npos) << notes[1];
}

TEST(SizeFit, RefusesTooFewSizes) {
  EXPECT_THROW(fitGrowth({{2, 100}, {2, 110}}, GrowthForm::Affine), AdviceError);
  EXPECT_THROW(fitGrowth({{2, 100}, {4, 180}}, GrowthForm::Quadratic), AdviceError);
}

// A job whose activations grow as `per` bytes times the size, with constant
// parameters; `square` adds bytes growing with the size squared.
Trace jobAt(int64_t size, Bytes square = 0, int units = 6) {
  ChainSpec c;
  c.units = units;
  c.steps = 3;
  c.params = 4000;
  c.saved = 200 * size + square * size * size;
  c.transient = 50 * size;
  c.output = 100 * size;
  c.grad = 10;
  Trace t = chainTrace(c);
  t.run.id = size;
  return t;
}

SizedChain sized(const Trace& t, int64_t size) {
  AdviceRequest r;
  r.strategy = Strategy::None;
  r.moments = true;  // as the what-if asks
  return {static_cast<double>(size), t.run.id, advise(t, r).chain, {}};
}

void expectSameChain(const UnitChain& got, const UnitChain& want) {
  EXPECT_EQ(got.names, want.names);
  EXPECT_EQ(got.unit_peak, want.unit_peak);
  EXPECT_EQ(got.gap_peak, want.gap_peak);
  EXPECT_EQ(got.before_backward, want.before_backward);
  EXPECT_EQ(got.born_kept, want.born_kept);
  EXPECT_EQ(got.born_peak, want.born_peak);
  EXPECT_EQ(got.saved, want.saved);
  EXPECT_EQ(got.outside, want.outside);
  EXPECT_EQ(got.baseline_peak, want.baseline_peak);
  EXPECT_EQ(got.persistent, want.persistent);
  EXPECT_EQ(evaluateChain(got, everyUnit(got.size())).peak, evaluateChain(want, everyUnit(want.size())).peak);
}

TEST(ChainScaling, AffineRunsPredictTheChainOfAnotherSize) {
  Trace a = jobAt(2), b = jobAt(4), truth = jobAt(16);
  ChainScaling s({sized(a, 2), sized(b, 4)}, GrowthForm::Affine);
  expectSameChain(s.at(16), sized(truth, 16).chain);
}

TEST(ChainScaling, QuadraticTermFromThreeRuns) {
  Trace a = jobAt(2, 30), b = jobAt(4, 30), c = jobAt(8, 30), truth = jobAt(20, 30);
  std::vector<SizedChain> runs = {sized(a, 2), sized(b, 4), sized(c, 8)};
  EXPECT_EQ(peakGrowthForm(runs), GrowthForm::Quadratic);
  ChainScaling s(runs, GrowthForm::Quadratic);
  expectSameChain(s.at(20), sized(truth, 20).chain);
  // A line through the same runs misses the square's growth.
  ChainScaling line(runs, GrowthForm::Affine);
  EXPECT_LT(line.at(20).baseline_peak, sized(truth, 20).chain.baseline_peak);
}

// One unit whose forward holds a large workspace that hardly grows and whose
// backward grows fast: the forward sets the unit's peak at sizes 2 and 4,
// the backward at 16.
SizedChain crossingMoments(double size) {
  Bytes forward = 1000 + 10 * static_cast<Bytes>(size);
  Bytes backward = 500 + 100 * static_cast<Bytes>(size);
  UnitChain c;
  c.names = {"layers.0"};
  c.forward_ns = {100};
  c.gap_ns = {0};
  c.unit_peak = {std::max(forward, backward)};
  c.unit_peak_moments = {{forward, backward}};
  c.gap_peak = {0};
  c.before_backward = {0};
  c.born_kept = {0};
  c.born_peak = {0};
  c.drops = {{}};
  c.saved = {0};
  c.baseline_peak = c.unit_peak[0];
  return {size, static_cast<int64_t>(size), c, {}};
}

TEST(ChainScaling, FitsEachMomentAndTakesTheMaximumAtTheNewSize) {
  ChainScaling s({crossingMoments(2), crossingMoments(4)}, GrowthForm::Affine);
  EXPECT_EQ(s.at(16).unit_peak[0], crossingMoments(16).chain.unit_peak[0]);  // 2100, the backward
  EXPECT_EQ(s.at(3).unit_peak[0], 1030);                                      // still the forward
  // A line through the maxima (1020, 1040) would say 1160 at 16: what the
  // fit falls back to when the runs' moments cannot be paired.
  SizedChain a = crossingMoments(2), b = crossingMoments(4);
  b.chain.unit_peak_moments[0].push_back(0);
  ChainScaling unpaired({a, b}, GrowthForm::Affine);
  EXPECT_EQ(unpaired.at(16).unit_peak[0], 1160);
}

// A loss whose highest instant moves with the size (HF GPT-2 had
// one more logits-sized tensor alive at its loss's peak at batch 16 than at
// 4): instant A, a tensor that hardly grows, is the highest at 2 and 4;
// instant B, two tensors of 200 bytes per sample alive at once, at 16.
Trace movingLoss(Bytes size) {
  testing::ChainSpec c;
  c.units = 2;
  c.steps = 2;
  Trace t = testing::chainTrace(c);
  for (int s = 0; s < c.steps; ++s) {
    Ns loss = testing::forwardStart(c, s, c.units - 1) + c.forward + 5;  // after the last forward
    testing::addAllocation(t, loss, loss + 10, 2000 + 10 * size, s);     // A
    testing::addAllocation(t, loss + 20, loss + 40, 200 * size, s);      // B
    testing::addAllocation(t, loss + 25, loss + 40, 200 * size, s);
  }
  return t;
}

SizedChain movingLossChain(Bytes size) {
  testing::ChainRun run(movingLoss(size), 2);
  return {static_cast<double>(size), size, run.chain, {}};
}

TEST(ChainScaling, FitsEachInstantOfARegionWhereTheHighestMoves) {
  UnitChain real = movingLossChain(16).chain;
  ChainScaling s({movingLossChain(2), movingLossChain(4)}, GrowthForm::Affine);
  EXPECT_EQ(s.at(16).gap_peak[1], real.gap_peak[1]);
  EXPECT_EQ(s.at(16).gap_peak[1] - s.at(4).gap_peak[1], 2 * 200 * 16 - (2000 + 10 * 4));  // B at 16, A at 4
  // The moments alone (a line through A at 2 and 4) are far too low at 16;
  // that is also the fall-back when the runs' instants do not pair up.
  SizedChain a = movingLossChain(2), b = movingLossChain(4);
  for (std::vector<Bytes>& moment : b.chain.gap_peak_instants[1]) moment.push_back(0);
  ChainScaling unpaired({a, b}, GrowthForm::Affine);
  EXPECT_EQ(real.gap_peak[1] - unpaired.at(16).gap_peak[1], 2 * 200 * 16 - (2000 + 10 * 16));
}

// The last gap after the checkpoints' arguments were freed (chain_peak.cpp
// adds the held bytes there): scaled like the other live numbers, each
// step's moment on its own; a step where none were freed stays 0.
TEST(ChainScaling, ScalesTheLastGapAfterTheHeldArguments) {
  auto job = [](double size) {
    SizedChain s = crossingMoments(size);
    Bytes first = 900 + 20 * static_cast<Bytes>(size), second = 400 + 90 * static_cast<Bytes>(size);
    s.chain.mid_after_arguments_moments = {first, second, 0};
    s.chain.mid_after_arguments = std::max(first, second);
    return s;
  };
  ChainScaling s({job(2), job(4)}, GrowthForm::Affine);
  EXPECT_EQ(s.at(16).mid_after_arguments, job(16).chain.mid_after_arguments);  // 1840, the second
  EXPECT_EQ(s.at(3).mid_after_arguments, job(3).chain.mid_after_arguments);    // 960, the first
  // Runs whose checkpoints hold nothing: nothing after them either.
  ChainScaling none({crossingMoments(2), crossingMoments(4)}, GrowthForm::Affine);
  EXPECT_EQ(none.at(16).mid_after_arguments, 0);
}

// One unit whose peak grows by 100 bytes per size, `bend` more at this size.
SizedChain straightJob(double size, Bytes bend = 0) {
  SizedChain s = crossingMoments(size);
  Bytes v = 1000 + 100 * static_cast<Bytes>(size) + bend;
  s.chain.unit_peak = {v};
  s.chain.unit_peak_moments = {{v}};
  s.chain.baseline_peak = v;
  return s;
}

TEST(ChainScaling, CheckReportsTheMissAtASizeTheLineIsNotDrawnThrough) {
  ChainScaling exact({straightJob(2), straightJob(4), straightJob(8)}, GrowthForm::Affine);
  EXPECT_EQ(exact.check().miss, 0);
  ChainScaling bent({straightJob(2, 15), straightJob(4), straightJob(8)}, GrowthForm::Affine);
  FitCheck c = bent.check();
  EXPECT_DOUBLE_EQ(c.size, 2);
  EXPECT_EQ(c.miss, 15);
  EXPECT_EQ(c.recorded, 1215);
  EXPECT_EQ(c.peak, 1215);
  EXPECT_EQ(c.number, "peak in layers.0");
  EXPECT_TRUE(c.independent);
  // The prediction follows the two largest sizes, not the bend.
  EXPECT_EQ(bent.at(32).unit_peak[0], straightJob(32).chain.unit_peak[0]);
  // With two sizes the line goes through both: nothing is checked.
  ChainScaling two({straightJob(2, 15), straightJob(4)}, GrowthForm::Affine);
  EXPECT_EQ(two.check().miss, 0);
  EXPECT_FALSE(two.check().independent);
}

TEST(ChainScaling, RefusesRunsWithDifferentUnits) {
  Trace a = jobAt(2, 0, 6), b = jobAt(4, 0, 7);
  try {
    ChainScaling s({sized(a, 2), sized(b, 4)}, GrowthForm::Affine);
    FAIL() << "accepted runs with different units";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("different units"), std::string::npos) << e.what();
  }
}

TEST(ChainScaling, RefusesAPeakThatDoesNotGrow) {
  Trace a = jobAt(4), b = jobAt(2);
  try {
    // Sizes swapped: the run called 4 is the smaller one.
    ChainScaling s({sized(a, 2), sized(b, 4)}, GrowthForm::Affine);
    FAIL() << "accepted a shrinking peak";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("does not grow"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChainScaling({sized(a, 2)}, GrowthForm::Affine), AdviceError);
}

Budget bytes(Bytes b) {
  Budget x;
  x.bytes = b;
  x.text = std::to_string(b) + "B";
  return x;
}

TEST(WhatIf, LargestSizeIsTheTrueLargestForEachStrategy) {
  Trace a = jobAt(2), b = jobAt(4);
  WhatIfRequest req;
  req.size_name = "batch";
  Bytes budget = 60000;
  req.advice.budget = bytes(budget);
  req.size = 24;
  WhatIf w = whatIf({{2, &a}, {4, &b}}, req);
  ASSERT_EQ(w.largest.size(), 4u);
  for (const LargestSize& l : w.largest) {
    ASSERT_GT(l.size, 0) << l.strategy;
    ASSERT_FALSE(l.capped) << l.strategy;
    // The truth: advise on the job actually built at that size and the next.
    for (int64_t size : {l.size, l.size + 1}) {
      Trace t = jobAt(size);
      AdviceRequest r;
      r.budget = bytes(budget);
      r.strategy = parseStrategy(l.strategy);
      Advice truth = advise(t, r);
      bool fits = truth.chosen.fits && truth.chosen.peak <= budget;
      EXPECT_EQ(fits, size == l.size) << l.strategy << " at " << size << ": peak " << truth.chosen.peak;
    }
  }
  // none < uniform/every <= optimal in size that fits.
  EXPECT_LT(w.largest[0].size, w.largest[3].size);
  EXPECT_GE(w.largest[3].size, w.largest[1].size);
  EXPECT_GE(w.largest[3].size, w.largest[2].size);
  // The plan for size 24 is a normal plan marked with its size.
  ASSERT_TRUE(w.plan.has_value());
  nlohmann::json doc = sizedPlanJson(w);
  EXPECT_EQ(doc["format"], kPlanFormat);
  EXPECT_EQ(doc["size"]["value"], 24);
  EXPECT_EQ(doc["size"]["recorded_size"], 4);
  EXPECT_EQ(doc["trace_run"], b.run.id);
  EXPECT_EQ(doc["what_if"]["largest"].size(), 4u);
  // The reports' table: one row per size, cells above the budget marked.
  std::string md = whatIfMarkdown(doc);
  EXPECT_NE(md.find("### What fits"), std::string::npos) << md;
  EXPECT_NE(md.find("| 24 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4 (recorded) |"), std::string::npos) << md;
  EXPECT_NE(md.find(" **"), std::string::npos) << md;  // the none column over budget at size 24
  EXPECT_NE(whatIfHtml(doc).find("class=\"bad\""), std::string::npos);
  EXPECT_EQ(whatIfMarkdown(nlohmann::json::object()), "");
  // Options the what-if does not answer are refused, not ignored.
  WhatIfRequest slow = req;
  slow.advice.max_slowdown = 0.3;
  EXPECT_THROW(whatIf({{2, &a}, {4, &b}}, slow), AdviceError);
  WhatIfRequest unbudgeted = req;
  unbudgeted.advice.budget.reset();
  EXPECT_THROW(whatIf({{2, &a}, {4, &b}}, unbudgeted), AdviceError);
}

TEST(WhatIf, SaysWhenTheAskedSizeIsTooFarPastTheRecordedOnes) {
  Trace a = jobAt(2), b = jobAt(4);
  WhatIfRequest req;
  req.size_name = "batch";
  req.advice.budget = bytes(60000);
  WhatIf w = whatIf({{2, &a}, {4, &b}}, req);
  int64_t farthest = 0;
  for (const LargestSize& l : w.largest) farthest = std::max(farthest, l.size);
  ASSERT_GT(farthest, 4 + 2 * kMaxExtrapolationSpans) << "the budget must make the largest size far";
  ASSERT_TRUE(w.extrapolation.has_value());
  EXPECT_EQ(w.extrapolation->size, farthest);
  EXPECT_DOUBLE_EQ(w.extrapolation->spans, (farthest - 4) / 2.0);
  // The suggested size is the smallest that brings the farthest within the limit.
  int64_t s = w.extrapolation->suggest;
  EXPECT_LE(farthest - s, kMaxExtrapolationSpans * (s - 2));
  EXPECT_GT(farthest - (s - 1), kMaxExtrapolationSpans * (s - 1 - 2));
  nlohmann::json doc = whatIfJson(w);
  EXPECT_EQ(doc["extrapolation"]["suggest_size"], s);
  EXPECT_FALSE(doc["fit_check"]["independent"]);
  // Recording it answers the same (the job grows exactly affinely) without the note.
  Trace c = jobAt(s);
  WhatIf three = whatIf({{2, &a}, {4, &b}, {s, &c}}, req);
  EXPECT_FALSE(three.extrapolation.has_value());
  for (size_t k = 0; k < w.largest.size(); ++k) EXPECT_EQ(three.largest[k].size, w.largest[k].size);
  EXPECT_EQ(three.fit_check.miss, 0);
  EXPECT_FALSE(whatIfJson(three).contains("extrapolation"));
  // The same sentences in the terminal and the reports.
  std::vector<std::string> notes = whatIfNotes(doc);
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_NE(notes[0].find("Fit check: none"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("Step time: a line through the 2 recorded sizes"), std::string::npos) << notes[1];
  EXPECT_NE(notes[2].find("also record batch=" + std::to_string(s)), std::string::npos) << notes[2];
  std::vector<std::string> checked = whatIfNotes(whatIfJson(three));
  ASSERT_EQ(checked.size(), 2u);
  EXPECT_NE(checked[0].find("reproduces every recorded size exactly"), std::string::npos) << checked[0];
  EXPECT_NE(checked[1].find("Step time: fitted over 3 sizes"), std::string::npos) << checked[1];
  WhatIfRequest sized = req;
  sized.size = 8;
  nlohmann::json plan = sizedPlanJson(whatIf({{2, &a}, {4, &b}}, sized));
  EXPECT_NE(whatIfMarkdown(plan).find("also record batch=" + std::to_string(s)), std::string::npos);
  EXPECT_NE(whatIfHtml(plan).find("<p>Fit check: none"), std::string::npos);
  // A requested size counts as asked.
  WhatIfRequest far = req;
  far.size = 100 * s;
  EXPECT_EQ(whatIf({{2, &a}, {4, &b}, {s, &c}}, far).extrapolation->size, 100 * s);
}

// A vision job whose size is the image's side: a convolution's activations
// grow with the pixels (side^2); `quartic` adds attention scores over
// patches (patches^2 = side^4 / patch^4), as a ViT's.
Trace imageJobAt(int64_t side, Bytes quartic = 0) {
  ChainSpec c;
  c.units = 4;
  c.steps = 3;
  c.params = 40000;
  Bytes pixels = side * side;
  c.saved = 3 * pixels + quartic * pixels * pixels;
  c.transient = pixels;
  c.output = 2 * pixels;
  c.grad = 10;
  Trace t = chainTrace(c);
  t.run.id = side;
  return t;
}

TEST(ChainScaling, ImageSideIsFittedOverItsSquare) {
  Trace a = imageJobAt(64), b = imageJobAt(128), truth = imageJobAt(224);
  // Two sides: affine in the pixels is the convolution's exact form.
  ChainScaling side({sized(a, 64), sized(b, 128)}, GrowthForm::Affine, SizeMeasure::Side);
  expectSameChain(side.at(224), sized(truth, 224).chain);
  // A line in the side itself cuts far below at a larger side.
  ChainScaling line({sized(a, 64), sized(b, 128)}, GrowthForm::Affine);
  EXPECT_LT(line.at(224).baseline_peak, sized(truth, 224).chain.baseline_peak * 9 / 10);
  // The fit check names sides, not their squares.
  Trace c = imageJobAt(96);
  ChainScaling three({sized(a, 64), sized(c, 96), sized(b, 128)}, GrowthForm::Affine, SizeMeasure::Side);
  EXPECT_EQ(three.check().miss, 0);
  EXPECT_EQ(peakGrowthForm({sized(a, 64), sized(c, 96), sized(b, 128)}, SizeMeasure::Side), GrowthForm::Affine);
}

TEST(ChainScaling, AttentionOverPatchesIsQuadraticInTheSidesSquare) {
  Trace a = imageJobAt(32, 1), b = imageJobAt(48, 1), c = imageJobAt(64, 1), truth = imageJobAt(128, 1);
  std::vector<SizedChain> runs = {sized(a, 32), sized(b, 48), sized(c, 64)};
  EXPECT_EQ(peakGrowthForm(runs, SizeMeasure::Side), GrowthForm::Quadratic);
  ChainScaling side(runs, GrowthForm::Quadratic, SizeMeasure::Side);
  expectSameChain(side.at(128), sized(truth, 128).chain);
  // A parabola in the side follows side^2 but not side^4.
  ChainScaling parabola(runs, GrowthForm::Quadratic);
  EXPECT_LT(parabola.at(128).baseline_peak, sized(truth, 128).chain.baseline_peak * 9 / 10);
}

TEST(WhatIf, SizeStepKeepsTheAnswersToSizesTheJobTakes) {
  Trace a = imageJobAt(64), b = imageJobAt(128);
  WhatIfRequest req;
  req.size_name = "image";
  req.measure = SizeMeasure::Side;
  const Bytes budget = 1500000;
  req.advice.budget = bytes(budget);
  // Without a step the budget's edge falls between multiples of 16.
  WhatIf any = whatIf({{64, &a}, {128, &b}}, req);
  bool off_step = false;
  for (const LargestSize& l : any.largest) off_step = off_step || l.size % 16 != 0;
  ASSERT_TRUE(off_step) << "the budget must not land on multiples of 16";
  req.size_step = 16;
  WhatIf w = whatIf({{64, &a}, {128, &b}}, req);
  EXPECT_EQ(whatIfJson(w)["size_step"], 16);
  EXPECT_EQ(whatIfJson(w)["measure"], "side");
  for (const LargestSize& l : w.largest) {
    ASSERT_GT(l.size, 0) << l.strategy;
    EXPECT_EQ(l.size % 16, 0) << l.strategy << " answered " << l.size;
    // The truth: the job built at that side fits, 16 more does not.
    for (int64_t side : {l.size, l.size + 16}) {
      Trace t = imageJobAt(side);
      AdviceRequest r;
      r.budget = bytes(budget);
      r.strategy = parseStrategy(l.strategy);
      Advice truth = advise(t, r);
      bool fits = truth.chosen.fits && truth.chosen.peak <= budget;
      EXPECT_EQ(fits, side == l.size) << l.strategy << " at " << side << ": peak " << truth.chosen.peak;
    }
  }
  for (const WhatIfRow& r : w.table) EXPECT_EQ(r.size % 16, 0) << r.size;
  if (w.extrapolation) {
    EXPECT_EQ(w.extrapolation->suggest % 16, 0);
  }
  // Sizes that are not multiples of the step are refused, not rounded.
  WhatIfRequest odd = req;
  odd.size = 200;
  EXPECT_THROW(whatIf({{64, &a}, {128, &b}}, odd), AdviceError);
  Trace c = imageJobAt(100);
  EXPECT_THROW(whatIf({{64, &a}, {100, &c}}, req), AdviceError);
}

TEST(ChainScaling, NamesTheSizesWhereTheCheckpointsArgumentsWereNotFound) {
  auto run = [](double size, std::vector<Bytes> held, Bytes mid) {
    SizedChain r;
    r.size = size;
    r.chain.held_arguments = held;
    r.chain.mid_after_arguments = mid;
    return r;
  };
  // Llama by sequence length (bench/RESULTS.md): nothing found at 64 tokens,
  // the second layer's arguments not at 128 either.
  EXPECT_EQ(sizesWithoutArguments({run(64, {0, 0}, 0), run(128, {263168, 0}, 87397034),
                                   run(256, {1050624, 1050624}, 101124778)}),
            (std::vector<double>{64, 128}));
  // Checkpoints that hold nothing at any size: nothing to say.
  EXPECT_TRUE(sizesWithoutArguments({run(2, {0, 0}, 0), run(4, {0, 0}, 0)}).empty());
  nlohmann::json w = {{"size_name", "seq"},
                      {"runs", {{{"run", 1}, {"size", 64}}, {{"run", 2}, {"size", 256}}}},
                      {"arguments_unmatched", {64, 128}}};
  bool said = false;
  for (const std::string& n : whatIfNotes(w)) said = said || n.find("not found in the run at seq=64, seq=128") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(PersistentMemory, SplitsConstantPerSizeAndWorkspace) {
  // Parameters (1000, 3000) in every run; a batch-shaped tensor of 64 bytes
  // per sample kept across steps; workspaces that follow nothing.
  PersistentSample small{2, 1000 + 3000 + 128 + 700, {1000, 3000, 128, 700}};
  PersistentSample large{4, 1000 + 3000 + 256 + 900, {3000, 256, 1000, 900}};
  PersistentModel m = persistentModel({large, small});
  EXPECT_EQ(m.constant, 4000);
  EXPECT_DOUBLE_EQ(m.per_size, 64);
  EXPECT_EQ(m.workspace, 900);
  EXPECT_EQ(m.at(4), large.persistent);
  EXPECT_EQ(m.at(16), 4000 + 16 * 64 + 900);
}

TEST(RunSize, NamesGiveSizes) {
  RunInfo r;
  r.id = 3;
  r.name = "batch=16";
  auto s = sizeFromName(r);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->name, "batch");
  EXPECT_EQ(s->size, 16);
  for (const char* bad : {"batch", "batch=", "=4", "batch=-2", "batch=0", "batch=4x"}) {
    r.name = bad;
    EXPECT_FALSE(sizeFromName(r).has_value()) << bad;
  }
  std::vector<RunInfo> runs(3);
  runs[0].id = 1, runs[0].name = "batch=2";
  runs[1].id = 2, runs[1].name = "seq=64";
  runs[2].id = 3, runs[2].name = "batch=4";
  EXPECT_EQ(sizedRuns(runs, "batch", "t.db").size(), 2u);
  EXPECT_THROW(sizedRuns(runs, "", "t.db"), AdviceError);   // two names: say which
  EXPECT_THROW(sizedRuns(runs, "seq", "t.db"), AdviceError);  // only one run
  EXPECT_EQ(parseSizeOf("3=16", "batch").size, 16);
  EXPECT_THROW(parseSizeOf("3:16", "batch"), AdviceError);
}

}  // namespace
}  // namespace gcprof::advisor

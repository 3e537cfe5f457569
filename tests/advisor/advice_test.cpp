#include "plan/advice.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "byte_text.h"
#include "error_in_child.h"
#include "chain_traces.h"
#include "advice_error.h"
#include "units/unit_selection.h"
#include "plan/plan_file.h"
#include "report/chrome_trace.h"
#include "report/text_escape.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;

ModuleStats module(const std::string& name, Bytes saved, Ns first) {
  ModuleStats m;
  m.name = name;
  m.depth = 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
  m.saved_bytes = saved;
  m.first_forward = first;
  m.backward_calls = 1;
  return m;
}

std::vector<ModuleStats> gptModules() {
  std::vector<ModuleStats> v = {module("", 100, 0), module("tok", 0, 1)};
  for (int i = 0; i < 4; ++i) {
    Ns t = 10 + 10 * i;
    v.push_back(module("layers." + std::to_string(i), 30, t));
    v.push_back(module("layers." + std::to_string(i) + ".mlp", 12, t + 1));
    v.push_back(module("layers." + std::to_string(i) + ".mlp.0", 4, t + 2));
    v.push_back(module("layers." + std::to_string(i) + ".mlp.2", 4, t + 3));
  }
  v.push_back(module("head", 0, 90));
  return v;
}

TEST(UnitSelection, AutoFindsTheRepeatedBlocksThatSaveMost) {
  UnitSelection s = selectUnits(gptModules(), "auto");
  EXPECT_EQ(s.names, (std::vector<std::string>{"layers.0", "layers.1", "layers.2", "layers.3"}));
  EXPECT_EQ(s.rule, "auto: layers.#");
  EXPECT_EQ(familyPattern("encoder.h.11"), "encoder.h.#");
  EXPECT_EQ(familyPattern("head"), "head");
}

TEST(UnitSelection, DepthAndRegexOverrideAuto) {
  EXPECT_EQ(selectUnits(gptModules(), "depth=3").names.size(), 4u);  // the mlps
  EXPECT_EQ(selectUnits(gptModules(), "layers\\.[02]").names,
            (std::vector<std::string>{"layers.0", "layers.2"}));
}

TEST(UnitSelection, BadChoicesAreClearErrors) {
  EXPECT_THROW(selectUnits(gptModules(), "layers\\.[0-9]+(\\.mlp)?"), AdviceError);  // nested
  EXPECT_THROW(selectUnits(gptModules(), "nothing.*"), AdviceError);
  EXPECT_THROW(selectUnits(gptModules(), "depth=x"), AdviceError);
  EXPECT_THROW(selectUnits(gptModules(), "(unclosed"), AdviceError);
  std::vector<ModuleStats> no_backward = gptModules();
  for (ModuleStats& m : no_backward) m.backward_calls = 0;
  try {
    selectUnits(no_backward, "auto");
    FAIL() << "no error";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("backward"), std::string::npos);
  }
}

Budget percent(double f) { return Budget::share(f); }

ChainSpec eightUnits(const std::string& runtime) {
  ChainSpec spec;
  spec.units = 8;
  spec.steps = 3;
  spec.runtime = runtime;
  return spec;
}

TEST(Advice, OptimalFitsTheBudgetAndBeatsEvery) {
  Trace t = chainTrace(eightUnits("native"));
  AdviceRequest r;
  r.budget = percent(0.6);
  Advice a = advise(t, r);
  ASSERT_TRUE(a.feasible) << a.message;
  EXPECT_EQ(a.kind, SegmentKind::Region);
  EXPECT_LE(a.chosen.peak, a.budget);
  if (a.every.fits) {
    EXPECT_LE(a.chosen.recompute_ns, a.every.recompute_ns);
  }
  if (a.uniform.fits) {
    EXPECT_LE(a.chosen.recompute_ns, a.uniform.recompute_ns);
  }
  EXPECT_EQ(a.budget, static_cast<Bytes>(std::llround(0.6 * a.baseline.peak)));
  EXPECT_EQ(a.chosen.step_ns, a.baseline.step_ns + a.chosen.recompute_ns);

  nlohmann::json plan = planJson(a);
  PlanFile p = parsePlan(plan, "test");
  EXPECT_EQ(p.budget_bytes, a.budget);
  EXPECT_EQ(p.predicted_peak, a.chosen.peak);
  EXPECT_EQ(p.baseline_peak, a.baseline.peak);
  EXPECT_EQ(p.checkpoint.size(), a.chosen.segments.size());
  EXPECT_EQ(p.segment_kind, "region");
}

TEST(Advice, PythonRunsGetSingleModuleSegments) {
  Trace t = chainTrace(eightUnits("python"));
  AdviceRequest r;
  r.budget = percent(0.65);
  Advice a = advise(t, r);
  ASSERT_TRUE(a.feasible) << a.message;
  EXPECT_EQ(a.kind, SegmentKind::Module);
  EXPECT_FALSE(a.chosen.segments.empty());
  for (const Segment& s : a.chosen.segments) EXPECT_EQ(s.first, s.last);
}

TEST(Budget, ASharePrintsAsAPercentAndResolvesAgainstThePeak) {
  Budget b = Budget::share(0.6);
  EXPECT_EQ(b.text, "60%");
  EXPECT_EQ(b.resolve(1000), 600);
  EXPECT_EQ(Budget::share(0.125).text, "12.5%");
  Budget s = Budget::size(1 << 20);
  EXPECT_FALSE(s.percent);
  EXPECT_EQ(s.resolve(1000), 1 << 20);
  EXPECT_EQ(s.text, "1.00 MiB");
}

TEST(Advice, InfeasibleBudgetNamesTheSmallestReachablePeak) {
  Trace t = chainTrace(eightUnits("native"));
  AdviceRequest r;
  r.budget = percent(0.05);
  Advice a = advise(t, r);
  EXPECT_FALSE(a.feasible);
  EXPECT_GT(a.min_reachable_peak, a.budget);
  EXPECT_NE(a.message.find("smallest peak any plan reaches"), std::string::npos);
  EXPECT_NE(a.message.find("the peak is set"), std::string::npos);
  // The infeasible fallback searched as much as the main search: not "thinned".
  EXPECT_TRUE(a.exact);
  // Asking for exactly that peak without headroom succeeds.
  Budget b;
  b.bytes = a.min_reachable_peak;
  r.budget = b;
  r.headroom.given = true;
  EXPECT_TRUE(advise(t, r).feasible);
  // The default headroom keeps a margin: the same budget no longer fits.
  r.headroom = HeadroomRequest{};
  Advice margin = advise(t, r);
  EXPECT_FALSE(margin.feasible);
  EXPECT_NE(margin.message.find("headroom"), std::string::npos) << margin.message;
}

// The size formatBytes prints one digit below the size it prints for `b`.
Bytes printedBelow(Bytes b) {
  if (b < 1024) return b - 1;
  std::string text = formatBytes(b);
  double shown = std::strtod(text.c_str(), nullptr);
  size_t dot = text.find('.'), space = text.find(' ');
  int decimals = dot == std::string::npos ? 0 : static_cast<int>(space - dot - 1);
  double unit = std::round(static_cast<double>(b) / shown);
  return std::llround((shown - std::pow(10.0, -decimals)) * unit);
}

// The size the infeasible message tells the user to raise the budget to is
// one advise then accepts, as printed (it was the least peak plus the
// headroom at the budget asked, which grows with the budget: BERT's "at
// least 306 MiB" failed again at 306 and 308 MiB).
TEST(Advice, TheBudgetTheHintNamesIsAcceptedAsPrinted) {
  for (const char* runtime : {"native", "python"}) {
    Trace t = chainTrace(eightUnits(runtime));
    for (double share : {0.05, 0.2, 0.3}) {
      AdviceRequest r;
      r.budget = percent(share);
      Advice a = advise(t, r);
      if (a.feasible) continue;
      ASSERT_GT(a.least_budget, 0) << a.message;
      std::string hint = "Raise the budget to at least " + formatBytes(a.least_budget) + " ";
      EXPECT_NE(a.message.find(hint), std::string::npos) << a.message;
      EXPECT_EQ(printedCeiling(a.least_budget), a.least_budget);
      r.budget = Budget::size(a.least_budget);
      Advice raised = advise(t, r);
      EXPECT_TRUE(raised.feasible) << runtime << " " << share << ": " << raised.message;
      r.budget = Budget::size(printedBelow(a.least_budget));
      EXPECT_FALSE(advise(t, r).feasible) << runtime << " " << share;
      // A budget-blind strategy names the size its own plan needs.
      r.budget = percent(share);
      r.strategy = Strategy::Every;
      Advice every = advise(t, r);
      ASSERT_FALSE(every.feasible);
      ASSERT_GT(every.least_budget, 0) << every.message;
      r.budget = Budget::size(every.least_budget);
      EXPECT_TRUE(advise(t, r).feasible) << every.message;
    }
  }
}

TEST(Headroom, TheLeastBudgetHoldsThePeakAndTheSizePrintedBelowDoesNot) {
  HeadroomRequest bytes_given, share_given;
  bytes_given.given = share_given.given = share_given.percent = true;
  bytes_given.bytes = 5 << 20;
  share_given.fraction = 0.1;
  for (const HeadroomRequest& req : {HeadroomRequest{}, bytes_given, share_given}) {
    // CUDA, the C++ runtime, the python shim (with arguments not told apart).
    for (int kind = 0; kind < 3; ++kind) {
      for (Bytes peak : {Bytes{900}, Bytes{70000}, Bytes{305} << 20, (Bytes{305} << 20) + 123457,
                         Bytes{9} << 30}) {
        TraceMargins margins;
        margins.jitter = peak / 37;
        margins.device = kind == 0;
        margins.native = kind == 1;
        margins.untold_arguments = kind == 2 ? peak / 151 : 0;
        auto holds = [&](Bytes b) { return b - resolveHeadroom(req, b, margins).bytes >= peak; };
        Bytes least = leastBudgetFor(peak, req, margins);
        EXPECT_TRUE(holds(least)) << peak;
        EXPECT_EQ(printedCeiling(least), least) << formatBytes(least);
        // The size printed one digit lower no longer holds the peak.
        Bytes below = printedBelow(least);
        EXPECT_FALSE(holds(below)) << formatBytes(least) << " " << formatBytes(below);
      }
    }
  }
  HeadroomRequest all;
  all.given = all.percent = true;
  all.fraction = 1;
  EXPECT_EQ(leastBudgetFor(1000, all, TraceMargins{}), -1);
}

TEST(Headroom, PrintedCeilingIsTheLeastSizePrintedExactlyAtOrAbove) {
  EXPECT_EQ(printedCeiling(1000), 1000);
  EXPECT_EQ(printedCeiling(Bytes{306} << 20), Bytes{306} << 20);
  EXPECT_EQ(printedCeiling((Bytes{306} << 20) + 1), Bytes{307} << 20);
  EXPECT_EQ(formatBytes(printedCeiling((Bytes{306} << 20) + 400000)), "307 MiB");
  EXPECT_EQ(formatBytes(printedCeiling((Bytes{1023} << 20) + 1)), "1.00 GiB");
  EXPECT_EQ(printedCeiling(Bytes{9990} << 10 | 1), std::llround(9.76 * 1048576));
}

ChainSpec steadySteps() {
  ChainSpec spec = eightUnits("native");
  spec.grad = 0;  // gradients re-allocated every step would make each step's peak higher
  return spec;
}

TEST(Advice, PlansKeepTheHeadroomBelowTheBudget) {
  Trace t = chainTrace(steadySteps());
  AdviceRequest r;
  r.budget = percent(0.6);
  Advice a = advise(t, r);
  ASSERT_TRUE(a.feasible) << a.message;
  // The chain trace's steps are identical: no jitter, only the C++ runtime's share.
  EXPECT_EQ(a.headroom.margins.jitter, 0);
  EXPECT_EQ(a.headroom.bytes, static_cast<Bytes>(std::llround(kNativeHeadroom * a.budget)));
  EXPECT_LE(a.chosen.peak, a.budget - a.headroom.bytes);
  nlohmann::json plan = planJson(a);
  EXPECT_EQ(plan["headroom_bytes"].get<Bytes>(), a.headroom.bytes);
  EXPECT_EQ(plan["headroom"]["solved_within_bytes"].get<Bytes>(), a.budget - a.headroom.bytes);
  EXPECT_EQ(parsePlan(plan, "test").headroom_bytes, a.headroom.bytes);

  // --headroom as a share of the budget, and a margin that leaves nothing.
  r.headroom.given = true;
  r.headroom.percent = true;
  r.headroom.fraction = 0.05;
  r.headroom.text = "5%";
  Advice five = advise(t, r);
  ASSERT_TRUE(five.feasible) << five.message;
  EXPECT_EQ(five.headroom.bytes, static_cast<Bytes>(std::llround(0.05 * five.budget)));
  EXPECT_LE(five.chosen.peak, five.budget - five.headroom.bytes);
  r.headroom.percent = false;
  r.headroom.bytes = a.budget;
  EXPECT_THROW(advise(t, r), AdviceError);
}

TEST(Advice, InPlaceModulesAreNeverProposed) {
  Trace t = chainTrace(eightUnits("python"));
  Scalar inplace;
  inplace.step = 0;
  inplace.name = "inplace layers.3";
  inplace.value = 1;
  t.scalars.push_back(inplace);
  AdviceRequest r;
  r.strategy = Strategy::Every;
  Advice a = advise(t, r);
  ASSERT_EQ(a.excluded.size(), 1u);
  EXPECT_EQ(a.excluded[0].name, "layers.3");
  EXPECT_EQ(std::count(a.chain.names.begin(), a.chain.names.end(), "layers.3"), 0);
  nlohmann::json plan = planJson(a);
  EXPECT_EQ(plan["excluded_units"][0]["name"], "layers.3");
  for (const auto& segment : plan["checkpoint"])
    for (const auto& unit : segment) EXPECT_NE(unit.get<std::string>(), "layers.3");
  // Only in-place units chosen: a clear error instead of a plan that crashes.
  r.units = "layers\\.3";
  try {
    advise(t, r);
    FAIL() << "no error";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("in place"), std::string::npos) << e.what();
  }
}

// The job checkpoints some blocks itself (HF gradient_checkpointing_enable):
// the shim records each recomputation in backward as the user range
// "recompute <module>". Those units are left out, saying why; when every
// unit is, advise says the job already checkpoints instead of a plan that
// recomputes twice for nothing.
void markJobRecomputes(Trace& t, const std::vector<std::string>& units) {
  int64_t id = 0;
  for (const Range& r : t.ranges) id = std::max(id, r.id);
  std::vector<Range> marks;
  for (const Range& r : t.ranges) {
    if (r.phase != Phase::Backward || std::find(units.begin(), units.end(), r.name) == units.end()) continue;
    Range m = r;  // recomputed at the start of its backward
    m.id = ++id;
    m.name = "recompute " + r.name;
    m.domain = RangeDomain::User;
    m.phase = Phase::User;
    m.end = r.start;
    marks.push_back(m);
  }
  t.ranges.insert(t.ranges.end(), marks.begin(), marks.end());
  std::stable_sort(t.ranges.begin(), t.ranges.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
}

TEST(Advice, UnitsTheJobCheckpointsItselfAreLeftOutSayingSo) {
  Trace t = chainTrace(eightUnits("python"));
  markJobRecomputes(t, {"layers.2", "layers.3"});
  AdviceRequest r;
  r.strategy = Strategy::Every;
  Advice a = advise(t, r);
  ASSERT_EQ(a.excluded.size(), 2u);
  EXPECT_EQ(a.excluded[0].name, "layers.2");
  EXPECT_NE(a.excluded[0].reason.find("already checkpointed by the job"), std::string::npos);
  EXPECT_EQ(std::count(a.chain.names.begin(), a.chain.names.end(), "layers.3"), 0);
  markJobRecomputes(t, a.chain.names);
  try {
    advise(t, r);
    FAIL() << "no error";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("already checkpointed by the job"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("record it without its checkpointing"), std::string::npos)
        << e.what();
  }
}

// HF's GradientCheckpointingLayer recomputes a layer's forward without its
// own hooks: only its children's recomputations are recorded.
TEST(Advice, ALayerWhoseChildrenAreAllRecomputedIsCheckpointedByTheJob) {
  Trace t;
  auto add = [&](const std::string& name, RangeDomain domain, Phase phase) {
    Range r;
    r.id = static_cast<int64_t>(t.ranges.size()) + 1;
    r.name = name;
    r.domain = domain;
    r.phase = phase;
    t.ranges.push_back(r);
  };
  for (const char* m : {"h", "h.0", "h.0.attn", "h.0.mlp", "h.0.mlp.fc", "h.1", "h.1.attn", "h.1.mlp", "wte"})
    add(m, RangeDomain::Module, Phase::Forward);
  add("recompute h.0.attn", RangeDomain::User, Phase::User);
  add("recompute h.0.mlp", RangeDomain::User, Phase::User);
  add("recompute h.1.mlp", RangeDomain::User, Phase::User);  // h.1.attn is not: h.1 is not either
  std::vector<std::string> names;
  for (const ExcludedUnit& u : jobCheckpointedModules(t)) names.push_back(u.name);
  EXPECT_EQ(names, (std::vector<std::string>{"h.0", "h.0.attn", "h.0.mlp", "h.1.mlp"}));
}

// Two losses, two backward calls (the first with retain_graph=True): the
// activations are freed by the second backward, after the units' ranges end.
TEST(Advice, ARetainedGraphIsRefusedNamingTheStepAndTheWayOut) {
  Trace t = chainTrace(eightUnits("python"));
  AdviceRequest r;
  r.strategy = Strategy::Every;
  EXPECT_NO_THROW(advise(t, r));
  Scalar retained;
  retained.step = 1;
  retained.name = "retain_graph";
  retained.value = 1;
  t.scalars.push_back(retained);
  try {
    advise(t, r);
    FAIL() << "no error";
  } catch (const AdviceError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("step 1 calls backward with retain_graph=True"), std::string::npos) << what;
    EXPECT_NE(what.find("(loss_a + loss_b).backward()"), std::string::npos) << what;
    // A GAN's discriminator loss backward through the generator (tests/e2e/gan_job.py
    // --loop coupled) cannot sum its losses: an optimizer steps between them.
    EXPECT_NE(what.find("d(fake.detach())"), std::string::npos) << what;
  }
}

TEST(Headroom, JitterIsTheSpreadOfTheSteadyStepPeaks) {
  Trace t = chainTrace(steadySteps());
  EXPECT_EQ(stepPeakJitter(t, primaryFilter(t), 1), 0);
  // One extra allocation live across the whole of the last step raises its peak only.
  const Step& last = t.steps.back();
  Allocation extra;
  extra.addr = 0x7777000;
  extra.bytes = 123;
  extra.alloc = last.start + 1;
  extra.free = last.end - 1;
  extra.range = 0;
  extra.step = last.index;
  auto at = std::lower_bound(t.allocations.begin(), t.allocations.end(), extra.alloc,
                             [](const Allocation& a, Ns v) { return a.alloc < v; });
  t.allocations.insert(at, extra);
  EXPECT_EQ(stepPeakJitter(t, primaryFilter(t), 1), 123);
  TraceMargins margins;
  margins.jitter = 123;
  Headroom h = resolveHeadroom(HeadroomRequest{}, 10000, margins);
  EXPECT_EQ(h.bytes, 100 + 123);
  EXPECT_NE(h.rule.find("jitter"), std::string::npos);
  margins.native = true;
  EXPECT_EQ(resolveHeadroom(HeadroomRequest{}, 10000, margins).bytes, 300 + 123);
  margins.untold_arguments = 1000;
  EXPECT_EQ(resolveHeadroom(HeadroomRequest{}, 10000, margins).bytes, 300 + 123 + 1000);
  EXPECT_EQ(resolveHeadroom(HeadroomRequest{}, 10000, TraceMargins{0, 0, true, false}).bytes, 500);
}

// The CUDA rule (docs/cuda.md): a trace whose tensors live on a device keeps
// 5% of the budget free (the caching allocator's rounding), not the 3% of a
// host run of the C++ runtime.
// Fabricated: the chain trace with every allocation moved to device 0.
TEST(Headroom, CudaTracesAreSolvedFivePercentBelowTheBudget) {
  Trace host = chainTrace(eightUnits("native"));
  Trace cuda = host;
  for (Allocation& a : cuda.allocations) a.device = 0;
  bool host_uses_the_cuda_margin = false;
  int feasible = 0;
  for (int pct = 40; pct <= 100; ++pct) {
    AdviceRequest r;
    r.budget = percent(pct / 100.0);
    // Tensor bytes, as the host run: the margin is this test's subject (a
    // trace this small reserves one 2 MiB segment whatever the plan).
    r.memory = MemoryMeasure::Allocated;
    Advice a = advise(cuda, r);
    ASSERT_TRUE(a.filter.device);
    EXPECT_DOUBLE_EQ(a.headroom.fraction, kDeviceHeadroom);
    EXPECT_EQ(a.headroom.bytes, std::llround(0.05 * static_cast<double>(a.budget)) + a.headroom.margins.jitter);
    EXPECT_NE(a.headroom.rule.find("CUDA"), std::string::npos) << a.headroom.rule;
    if (a.feasible) {
      ++feasible;
      EXPECT_LE(a.chosen.peak, a.budget - a.headroom.bytes) << pct << "%";
      nlohmann::json plan = planJson(a);
      EXPECT_EQ(plan["headroom_bytes"], a.headroom.bytes);
      EXPECT_DOUBLE_EQ(plan["headroom"]["fraction"].get<double>(), 0.05);
    }
    // The same memory on the host (C++ runtime) is solved to 3%: at some
    // budget its plan lands inside the CUDA margin, so the 5% above is what
    // kept CUDA out.
    Advice h = advise(host, r);
    EXPECT_FALSE(h.filter.device);
    EXPECT_DOUBLE_EQ(h.headroom.fraction, kNativeHeadroom);
    if (h.feasible && h.chosen.peak > a.budget - a.headroom.bytes) host_uses_the_cuda_margin = true;
  }
  EXPECT_GT(feasible, 10);
  EXPECT_TRUE(host_uses_the_cuda_margin);
}

// Budgets bound reserved memory on CUDA runs by default (plan/memory_measure.h):
// units of MiB-sized activations, so that the caching allocator's 20 MiB
// segments and 2 MiB rounding make reserved differ from allocated.
ChainSpec mibUnits() {
  ChainSpec c = eightUnits("native");
  const Bytes MiB = 1 << 20;
  c.params = 40 * MiB;
  c.transient = 3 * MiB;
  c.saved = 12 * MiB;
  c.output = 5 * MiB;
  c.grad = 2 * MiB;
  return c;
}

TEST(Advice, CudaRunsBudgetReservedMemoryByDefault) {
  Trace t = chainTrace(mibUnits());
  for (Allocation& a : t.allocations) a.device = 0;
  AdviceRequest r;
  r.budget = percent(0.7);
  Advice a = advise(t, r);
  EXPECT_EQ(a.memory.measure, MemoryMeasure::Reserved);
  EXPECT_TRUE(a.memory.reserved_modelled);
  EXPECT_NE(a.memory.why.find("default settings"), std::string::npos) << a.memory.why;
  ASSERT_GT(a.baseline.reserved_peak, a.baseline.peak);  // rounding and segments cost something
  EXPECT_EQ(a.budget, static_cast<Bytes>(std::llround(0.7 * a.baseline.reserved_peak)));
  ASSERT_TRUE(a.feasible) << a.message;
  EXPECT_LE(a.chosen.reserved_peak, a.limit());
  EXPECT_GE(a.chosen.reserved_peak, a.chosen.peak);
  nlohmann::json plan = planJson(a);
  EXPECT_EQ(plan["budget_memory"], "reserved");
  PlanFile p = parsePlan(plan, "test");
  EXPECT_EQ(p.budget_memory, "reserved");
  EXPECT_EQ(p.predicted_reserved_peak, a.chosen.reserved_peak);
  EXPECT_EQ(p.baseline_reserved_peak, a.baseline.reserved_peak);

  // The same budget in bytes on allocated memory is a looser bound (tensor
  // bytes never exceed what holds them): never more recompute.
  AdviceRequest alloc = r;
  alloc.budget = Budget::size(a.budget);
  alloc.memory = MemoryMeasure::Allocated;
  Advice b = advise(t, alloc);
  EXPECT_EQ(b.memory.measure, MemoryMeasure::Allocated);
  EXPECT_GE(b.chosen.reserved_peak, 0);  // still predicted alongside
  EXPECT_EQ(planJson(b)["budget_memory"], "allocated");
  EXPECT_LE(b.chosen.recompute_ns, a.chosen.recompute_ns);
}

TEST(Advice, TheRunsAllocatorSettingsAreReplayed) {
  Trace t = chainTrace(mibUnits());
  for (Allocation& a : t.allocations) a.device = 0;
  AdviceRequest recorded;
  recorded.strategy = Strategy::None;
  Advice plain = advise(t, recorded);
  t.run.env = R"({"PYTORCH_CUDA_ALLOC_CONF":"expandable_segments:True"})";
  Advice expandable = advise(t, recorded);
  EXPECT_TRUE(expandable.memory.allocator.expandable_segments);
  EXPECT_NE(expandable.memory.why.find("expandable_segments:True"), std::string::npos);
  EXPECT_NE(plain.baseline.reserved_peak, expandable.baseline.reserved_peak);
  EXPECT_EQ(plain.baseline.peak, expandable.baseline.peak);
}

TEST(Advice, ReservedMemoryIsRefusedWhereItIsNotModelled) {
  AdviceRequest r;
  r.budget = percent(0.7);
  r.memory = MemoryMeasure::Reserved;
  Trace host = chainTrace(mibUnits());
  try {
    advise(host, r);
    FAIL() << "reserved memory budgeted on a host run";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  Trace async = host;
  for (Allocation& a : async.allocations) a.device = 0;
  async.run.env = R"({"PYTORCH_CUDA_ALLOC_CONF":"backend:cudaMallocAsync"})";
  EXPECT_THROW(advise(async, r), AdviceError);
  r.memory.reset();
  Advice a = advise(async, r);  // the default falls back, saying why
  EXPECT_EQ(a.memory.measure, MemoryMeasure::Allocated);
  EXPECT_NE(a.memory.why.find("cudaMallocAsync"), std::string::npos) << a.memory.why;
  EXPECT_EQ(a.baseline.reserved_peak, -1);
  EXPECT_FALSE(planJson(a)["predicted"].contains("reserved_peak_bytes"));
  AdviceRequest host_default;
  host_default.budget = r.budget;
  Advice h = advise(host, host_default);
  EXPECT_EQ(h.memory.measure, MemoryMeasure::Allocated);
  EXPECT_THROW(parseMemoryMeasure("cached"), AdviceError);
}

TEST(Advice, MaxSlowdownIsTheDual) {
  Trace t = chainTrace(eightUnits("native"));
  AdviceRequest r;
  r.max_slowdown = 0.05;
  Advice a = advise(t, r);
  ASSERT_TRUE(a.feasible) << a.message;
  EXPECT_LE(static_cast<double>(a.chosen.recompute_ns), 0.05 * a.baseline.step_ns);
  r.max_slowdown = 10.0;  // anything goes: the least peak of all
  Advice loose = advise(t, r);
  EXPECT_LE(loose.chosen.peak, a.chosen.peak);
  EXPECT_LE(loose.chosen.peak, loose.every.peak);
}

TEST(Advice, OptimalNeedsATarget) {
  Trace t = chainTrace(eightUnits("native"));
  EXPECT_THROW(advise(t, AdviceRequest{}), AdviceError);
  AdviceRequest every;
  every.strategy = Strategy::Every;
  EXPECT_TRUE(advise(t, every).feasible);
}

TEST(PlanFile, RejectsForeignDocuments) {
  EXPECT_THROW(parsePlan(nlohmann::json::array(), "x"), AdviceError);
  EXPECT_THROW(parsePlan({{"format", "other/1"}}, "x"), AdviceError);
  EXPECT_THROW(parsePlan({{"format", kPlanFormat}, {"budget_bytes", 1}}, "x"), AdviceError);
  EXPECT_THROW(parsePlan({{"format", kPlanFormat}, {"budget_bytes", "a lot"}, {"checkpoint", nlohmann::json::array()}}, "x"),
               AdviceError);
  EXPECT_THROW(readPlanFile("/nonexistent/plan.json"), AdviceError);
}

// The message a plan error gives, for asserting on its words.
std::string planError(const std::string& text) {
  try {
    parsePlanText(text, "p.json");
  } catch (const AdviceError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PlanFile, AMissingFileIsNamedMissing) {
  try {
    readPlanFile("/nonexistent/missing.json");
    FAIL() << "no error";
  } catch (const AdviceError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/missing.json: no such plan file"), std::string::npos)
        << e.what();
  }
}

// A read that blocks (a named pipe's did, for ever) fails the test after 10 s.
std::string planFileErrorInChild(const std::string& path) {
  return gcprof::test::errorInChild([&] { readPlanFile(path); });
}

TEST(PlanFile, ANamedPipeOrADirectoryIsRefusedWithoutBlocking) {
  std::string fifo = ::testing::TempDir() + "gcprof_plan_fifo_" + std::to_string(getpid());
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string err = planFileErrorInChild(fifo);
  std::remove(fifo.c_str());
  EXPECT_NE(err.find(fifo + ": is a named pipe (FIFO), not a plan file"), std::string::npos) << err;
  err = planFileErrorInChild(::testing::TempDir());
  EXPECT_NE(err.find("is a directory, not a plan file"), std::string::npos) << err;
}

TEST(PlanFile, DeepNestingIsAnErrorNotAStackOverflow) {
  // 100k levels overflowed the stack in a recursive copy once.
  std::string deep = R"({"format":"gcprof.plan/1","budget_bytes":1,"checkpoint":[],"x":)";
  deep += std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_NE(planError(deep).find("p.json: nested deeper than"), std::string::npos) << planError(deep);
}

TEST(PlanFile, WrongTypedOptionalFieldsNameTheField) {
  const std::string head = R"({"format":"gcprof.plan/1","budget_bytes":1,"checkpoint":[],)";
  EXPECT_EQ(planError(head + R"("units":"layers.0"})"),
            "p.json: plan field \"units\" has the wrong type");
  EXPECT_EQ(planError(head + R"("predicted":{"peak_bytes":"big"}})"),
            "p.json: plan field \"predicted.peak_bytes\" has the wrong type");
  EXPECT_EQ(planError(head + R"("baseline":7})"),
            "p.json: plan field \"baseline\" has the wrong type (expected an object)");
  EXPECT_EQ(planError(head + R"("trace_run":"one"})"),
            "p.json: plan field \"trace_run\" has the wrong type");
  // Found by plan_parser_fuzz: a float converted to an integer out of range.
  EXPECT_EQ(planError(head + R"("trace_run":8.66667e+113})"),
            "p.json: plan field \"trace_run\" has the wrong type");
  EXPECT_EQ(planError(head + R"("predicted":{"step_ns":1.5}})"),
            "p.json: plan field \"predicted.step_ns\" has the wrong type");
  EXPECT_EQ(planError(head + R"("units":["a"]})"), "(no error)");
  const std::string whole = "p.json: plan field \"budget_bytes\" must be a whole number of bytes from 0 to 2^63";
  EXPECT_EQ(planError(R"({"format":"gcprof.plan/1","budget_bytes":1e30,"checkpoint":[]})"), whole);
  EXPECT_EQ(planError(R"({"format":"gcprof.plan/1","budget_bytes":-1,"checkpoint":[]})"), whole);
  EXPECT_EQ(planError(R"({"format":"gcprof.plan/1","budget_bytes":18446744073709551615,"checkpoint":[]})"), whole);
}

TEST(MarkdownCode, NamesCannotEndTheCodeSpanOrTheTableCell) {
  EXPECT_EQ(markdownCode("layers.0"), "`layers.0`");
  // A backtick in a module name once ended the span: the rest was Markdown.
  EXPECT_EQ(markdownCode("a`[x](http://e)`"), "`` a`[x](http://e)` ``");
  EXPECT_EQ(markdownCode("a``b"), "```a``b```");
  EXPECT_EQ(markdownCode("x|y\n# h"), "`x\\|y?# h`");
}

TEST(ChromeTrace, SlicesCountersAndInstants) {
  Trace t = chainTrace(eightUnits("native"));
  nlohmann::json j = chromeTrace(t);
  size_t slices = 0, counters = 0, instants = 0;
  for (const auto& e : j["traceEvents"]) {
    std::string ph = e["ph"];
    slices += ph == "X";
    counters += ph == "C";
    instants += ph == "i";
  }
  EXPECT_EQ(slices, t.ranges.size());
  EXPECT_EQ(instants, t.steps.size());
  EXPECT_GT(counters, 10u);
  EXPECT_EQ(j["otherData"]["peak_bytes"], memoryCurve(t).peak);
}

// DenseNet's dense layers take a list of tensors, so the recording cannot
// see their inputs' gradients and each layer's backward range ends only with
// its dense block's: the layers (the blocks `auto` finds) are not in chain
// order, and advise refused the model at every budget. It falls back to the
// stages the rule descended from, the dense blocks, which are.
TEST(Advice, BlocksNotInChainOrderFallBackToTheirStages) {
  ChainSpec c;
  c.units = 4;
  c.output = 10;
  Trace t = chainTrace(c);
  auto layer = [](int k) { return "blocks." + std::to_string(k / 2) + ".layer." + std::to_string(k % 2); };
  for (Range& r : t.ranges) {
    int k = r.name.back() - '0';
    r.name = layer(k);
    r.depth = 3;
    // The second layer of each block: its backward ends with the first's.
    if (r.phase == Phase::Backward && k % 2 == 1) r.end = testing::backwardStart(c, 0, k - 1) + 40;
  }
  testing::TraceBuilder b;
  for (int s = 0; s < 2; ++s)
    for (Phase ph : {Phase::Forward, Phase::Backward}) {
      int64_t id = b.range("blocks." + std::to_string(s), ph,
                           ph == Phase::Forward ? testing::forwardStart(c, 0, 2 * s) : testing::backwardStart(c, 0, 2 * s + 1),
                           ph == Phase::Forward ? testing::forwardStart(c, 0, 2 * s + 1) + c.forward
                                                : testing::backwardStart(c, 0, 2 * s) + 40);
      (void)id;
    }
  for (const Range& r : t.ranges)  // a sub-module each: the layers are composites (blocks)
    b.range(r.name + ".conv", r.phase, r.start + 1, r.phase == Phase::Forward ? r.end - 1 : r.start + 30);
  for (Range r : b.build().ranges) {
    r.id += 10000;
    t.ranges.push_back(r);
  }
  testing::sortAsLoaded(t);
  AdviceRequest r;
  r.budget = percent(0.9);
  Advice a = advise(t, r);
  EXPECT_EQ(a.units.names, std::vector<std::string>({"blocks.0", "blocks.1"}));
  EXPECT_NE(a.units.rule.find("auto: blocks.# (its blocks are not in chain order: backward of blocks.1.layer.0 starts before blocks.1.layer.1's ends)"),
            std::string::npos) << a.units.rule;
  EXPECT_GT(a.layout.complete, 0u);
}

}  // namespace
}  // namespace gcprof::advisor

// Plans over the module tree (chain/module_tree.h): which sub-modules are
// candidates, and the solver's tree segments (a sub-module, or one block's
// whole span) against brute force over every tree plan.
#include "chain/module_tree.h"

#include <gtest/gtest.h>

#include <climits>
#include <functional>

#include "random_chain.h"
#include "solve/optimal_solver.h"

namespace gcprof::advisor {
namespace {

ModuleStats module(const std::string& name, double calls = 1, double backward_calls = 1) {
  ModuleStats m;
  m.name = name;
  m.depth = static_cast<int>(std::count(name.begin(), name.end(), '.')) + 1;
  m.calls = calls;
  m.backward_calls = backward_calls;
  return m;
}

TEST(ModuleTree, BlocksSplitIntoTheirCheckpointableDirectSubModules) {
  std::vector<ModuleStats> mods = {
      module("h.0"), module("h.0.ln_1"), module("h.0.attn"), module("h.0.attn.c_attn"),
      module("h.0.ln_2"), module("h.0.mlp"),
      module("h.1"), module("h.1.conv"), module("h.1.relu", 2),  // called twice per pass
      module("h.1.drop", 1, 0),                                  // no backward recorded
      module("h.1.act"),                                         // in place
      module("h.2"), module("h.2.a"), module("h.2.b"), module("h.20.x")};
  ModuleTree t = moduleTree(mods, {"h.0", "h.1", "h.2"}, {{"h.1.act", "changes its input in place"}});
  // h.0 splits into its direct sub-modules (not attn.c_attn); h.1 has one
  // candidate left and stays whole; h.20.x is not inside h.2.
  EXPECT_EQ(t.names, (std::vector<std::string>{"h.0.ln_1", "h.0.attn", "h.0.ln_2", "h.0.mlp", "h.1",
                                                 "h.2.a", "h.2.b"}));
  EXPECT_EQ(t.block_of, (std::vector<int>{0, 0, 0, 0, 1, 2, 2}));
  EXPECT_TRUE(t.split(0));
  EXPECT_FALSE(t.split(1));
  EXPECT_EQ(t.spanLast(), (std::vector<int>{3, -1, -1, -1, -1, 6, -1}));
  EXPECT_EQ(t.moduleOf({0, 3}), "h.0");
  EXPECT_EQ(t.moduleOf({1, 1}), "h.0.attn");
  EXPECT_EQ(t.moduleOf({4, 4}), "h.1");
  EXPECT_EQ(t.moduleOf({5, 6}), "h.2");
  EXPECT_EQ(t.fromBlockPlan({{0, 0}, {2, 2}}), (Segments{{0, 3}, {5, 6}}));
  // A plan file's units and blocks give the same tree back.
  ModuleTree back = treeOfPlan(t.names, t.blocks);
  EXPECT_EQ(back.span, t.span);
  EXPECT_EQ(back.block_of, t.block_of);
  // Units that are not inside the blocks: not a tree plan, the flat tree.
  EXPECT_FALSE(treeOfPlan({"a", "b"}, {"x"}).anySplit());
}

// A block whose MLP the job checkpoints itself (`checkpoint(self.mlp, h)` in
// the block's forward, recorded as "recompute h.0.mlp"): the MLP is no
// candidate, so ln_2 is the block's last and its window is widened over the
// MLP to the block's end. Checkpointing ln_2 alone was then simulated as
// dropping ln_2's output, which the job's own checkpoint holds as the MLP's
// input (measured: 1 MiB over the prediction per such ln_2, a verify FAIL of
// a two-tower job at 75%). It goes only with its whole block; a job-checkpointed
// sibling in the middle (h.1) changes nothing.
TEST(ModuleTree, AnEdgeSubModuleWidenedOverOneTheJobCheckpointsGoesOnlyWithItsBlock) {
  std::vector<ModuleStats> mods = {module("h.0"), module("h.0.ln_1"), module("h.0.attn"), module("h.0.ln_2"),
                                   module("h.0.mlp"), module("h.1"), module("h.1.ln_1"), module("h.1.mlp"),
                                   module("h.1.ln_2"), module("h.1.out")};
  Trace recorded;  // the shim's marks of the job's own recomputations
  for (const char* name : {"recompute h.0.mlp", "recompute h.1.mlp"}) {
    Range r;
    r.name = name;
    recorded.ranges.push_back(r);
  }
  std::vector<ExcludedUnit> job = jobCheckpointedModules(recorded);
  ModuleTree t = moduleTree(mods, {"h.0", "h.1"}, job);
  EXPECT_EQ(t.names, (std::vector<std::string>{"h.0.ln_1", "h.0.attn", "h.0.ln_2", "h.1.ln_1", "h.1.ln_2",
                                                 "h.1.out"}));
  EXPECT_EQ(t.whole_only, (std::vector<bool>{false, false, true, false, false, false}));
  SolverOptions o;
  o.tree_span_last = t.spanLast();
  o.tree_whole_only = t.whole_only;
  EXPECT_FALSE(o.allows(2, 2));  // ln_2 alone
  EXPECT_TRUE(o.allows(0, 2));   // the whole block
  EXPECT_TRUE(o.allows(1, 1));   // attn alone
  EXPECT_TRUE(o.allows(4, 4));
  // A module left out for another reason (in place) keeps today's rule.
  ModuleTree in_place = moduleTree(mods, {"h.0"}, {{"h.0.mlp", "changes its input in place"}});
  EXPECT_EQ(in_place.whole_only, (std::vector<bool>{false, false, false}));
}

// Every tree plan: each unit left alone or its own segment, and each split
// block's span as one segment.
void forEachTreePlan(const std::vector<int>& span_last, const std::function<void(const Segments&)>& visit) {
  int n = static_cast<int>(span_last.size());
  Segments plan;
  std::function<void(int)> rec = [&](int k) {
    if (k == n) {
      visit(plan);
      return;
    }
    rec(k + 1);
    plan.push_back({k, k});
    rec(k + 1);
    plan.pop_back();
    if (span_last[k] > k) {
      plan.push_back({k, span_last[k]});
      rec(span_last[k] + 1);
      plan.pop_back();
    }
  };
  rec(0);
}

// A random split of n chain units into blocks of 1..4 units.
ModuleTree randomTree(int n, std::mt19937_64& rng) {
  ModuleTree t;
  int k = 0;
  while (k < n) {
    int size = std::min<int>(n - k, 1 + static_cast<int>(rng() % 4));
    int b = static_cast<int>(t.blocks.size());
    t.blocks.push_back("b" + std::to_string(b));
    for (int i = 0; i < size; ++i) {
      t.names.push_back(size == 1 ? t.blocks.back() : t.blocks.back() + ".c" + std::to_string(i));
      t.block_of.push_back(b);
    }
    t.span.push_back({k, k + size - 1});
    k += size;
  }
  return t;
}

TEST(ModuleTree, TreeSegmentsEqualBruteForceAndNeverLoseToWholeBlocks) {
  for (int n : {1, 3, 5, 8, 11, 14}) {
    for (uint64_t seed = 1; seed <= (n <= 8 ? 12u : 3u); ++seed) {
      std::mt19937_64 rng(seed * 7877 + n);
      UnitChain c = testing::randomChain(n, rng);
      ModuleTree tree = randomTree(n, rng);
      SolverOptions o;
      o.tree_span_last = tree.spanLast();
      Solution minp = minimumPeak(c, o);
      ASSERT_TRUE(minp.feasible);
      for (double frac : {0.0, 0.2, 0.5, 0.9}) {
        Bytes budget = minp.peak + static_cast<Bytes>(frac * (c.baseline_peak - minp.peak));
        Ns cost_limit = static_cast<Ns>(frac * 300 * n / 4);
        SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed) + " budget=" +
                     std::to_string(budget));
        Ns best = LLONG_MAX, best_blocks = LLONG_MAX;
        Bytes min_peak = LLONG_MAX, least_within = LLONG_MAX;
        forEachTreePlan(o.tree_span_last, [&](const Segments& plan) {
          ChainPeak p = evaluateChain(c, plan);
          if (p.peak <= budget) best = std::min(best, p.recompute_ns);
          min_peak = std::min(min_peak, p.peak);
          if (p.recompute_ns <= cost_limit) least_within = std::min(least_within, p.peak);
        });
        // The best plan of whole blocks (one level), on the same chain.
        std::vector<int> flat(tree.blocks.size(), -1);
        forEachTreePlan(flat, [&](const Segments& block_plan) {
          ChainPeak p = evaluateChain(c, tree.fromBlockPlan(block_plan));
          if (p.peak <= budget) best_blocks = std::min(best_blocks, p.recompute_ns);
        });
        EXPECT_EQ(minp.peak, min_peak);
        Solution s = solveOptimal(c, budget, o);
        ASSERT_TRUE(s.feasible);
        EXPECT_TRUE(s.exact);
        EXPECT_EQ(s.recompute_ns, best);
        EXPECT_LE(s.recompute_ns, best_blocks);
        EXPECT_TRUE(o.allows(s.segments));
        Solution within = leastPeakWithin(c, cost_limit, o);
        EXPECT_EQ(within.peak, least_within);
        EXPECT_TRUE(o.allows(within.segments));
      }
    }
  }
}

// Long chains are thinned (max_front); the plan stays a tree plan, fits, and
// says it is not exact only when a front was actually cut.
TEST(ModuleTree, LongChainsStayValidTreePlans) {
  std::mt19937_64 rng(99);
  UnitChain c = testing::randomChain(160, rng);
  ModuleTree tree = randomTree(160, rng);
  SolverOptions o = defaultSolverOptions(c.size(), SegmentKind::Module);
  o.tree_span_last = tree.spanLast();
  o.max_front = 16;
  Solution minp = minimumPeak(c, o);
  ASSERT_TRUE(minp.feasible);
  Bytes budget = minp.peak + (c.baseline_peak - minp.peak) / 3;
  Solution s = solveOptimal(c, budget, o);
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(o.allows(s.segments));
  EXPECT_LE(evaluateChain(c, s.segments).peak, budget);
  SolverOptions exact = o;
  exact.max_front = 1u << 20;
  Solution e = solveOptimal(c, budget, exact);
  EXPECT_LE(e.recompute_ns, s.recompute_ns);
  if (s.recompute_ns > e.recompute_ns) {
    EXPECT_FALSE(s.exact);
  }
}

}  // namespace
}  // namespace gcprof::advisor

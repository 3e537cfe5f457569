// Selective checkpoints (a save-list per unit): the per-unit trade-off and the
// optimal search with per-unit options against brute force over every
// assignment of keep / whole / selective option to every unit.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>

#include "chain/chain_peak.h"
#include "chain/selective_options.h"
#include "random_chain.h"
#include "unit_plans.h"
#include "solve/fixed_plans.h"
#include "solve/optimal_solver.h"

namespace gcprof::advisor {
namespace {

UnitOp op(const std::string& key, Ns ns, Bytes kept, Bytes lingering = 0, bool unpriced = false) {
  return {key, ns, kept, lingering, unpriced};
}

// An output autograd does not keep that the chain cannot price when saved
// (op_table.h: freed after the unit's forward, or after the replay stops).
UnitOp unpriced(const std::string& key, Ns ns, Bytes lingering) { return op(key, ns, 0, lingering, true); }

TEST(SelectiveOptions, SaveOnlyPricedOutputsCheapestBytesFirst) {
  std::vector<UnitOp> ops = {
      op("aten.native_layer_norm.default#0", 10, 100),
      op("aten.view.default#0", 1, 0),                  // a view: makes no output
      unpriced("aten.addmm.default#0", 50, 300),        // lingering, not priced
      op("aten._softmax.default#0", 20, 400),
      op("aten.zeros.default#0", 1, 400),               // filled in place later
      op("aten.index_put_.default#0", 5, 0),            // in place
      op("aten.addmm.default#1", 80, 200),
      op("aten.gelu.default#0", 10, 200)};
  std::vector<SelectiveOption> options = selectiveOptions(ops, 2000);
  ASSERT_FALSE(options.empty());
  // torchtitan's rule saves both addmm calls, the one whose output autograd
  // does not keep included (held until the recomputation: lingering).
  EXPECT_EQ(options[0].label, "matmuls");
  EXPECT_EQ(options[0].save, (std::vector<std::string>{"aten.addmm.default#0", "aten.addmm.default#1"}));
  EXPECT_EQ(options[0].kept, 200);
  EXPECT_EQ(options[0].lingering, 300);
  EXPECT_TRUE(options[0].lingers());
  EXPECT_EQ(options[0].saved_ns, 130);
  // Saveable: layer_norm (10 B/ns), softmax (20), addmm#1 (2.5), gelu (20).
  // Prefixes by bytes per ns: addmm#1, then layer_norm, then softmax/gelu.
  std::vector<std::vector<std::string>> lists;
  for (size_t i = 1; i < options.size(); ++i) {
    lists.push_back(options[i].save);
    EXPECT_FALSE(options[i].lingers());
  }
  ASSERT_EQ(lists.size(), 4u);  // 1, 2, 3 and 4 calls
  EXPECT_EQ(lists[0], std::vector<std::string>{"aten.addmm.default#1"});
  EXPECT_EQ(lists[1], (std::vector<std::string>{"aten.native_layer_norm.default#0", "aten.addmm.default#1"}));
  EXPECT_EQ(options.back().kept, 900);
  EXPECT_EQ(options.back().saved_ns, 120);
  for (const SelectiveOption& o : options)
    for (const std::string& k : o.save) {
      EXPECT_NE(k, "aten.view.default#0");
      EXPECT_NE(k, "aten.zeros.default#0");
      EXPECT_NE(k, "aten.index_put_.default#0");
    }
  for (size_t i = 1; i < options.size(); ++i)
    for (const std::string& k : options[i].save) EXPECT_NE(k, "aten.addmm.default#0");  // not priced
  EXPECT_FALSE(options[0].lingering_priced);  // torchtitan's rule saves it anyway
  // A list keeping everything the unit drops is no option.
  EXPECT_TRUE(selectiveOptions({op("aten.mm.default#0", 10, 500)}, 500).empty());
}

// A CPU dropout: the mask made by empty_like, filled by bernoulli_ and
// scaled by div_, then multiplied with the input (out of place).
std::vector<UnitOp> dropout(int n, Ns draw_ns, Bytes mask) {
  std::string i = "#" + std::to_string(n);
  return {op("aten.empty_like.default" + i, 1, mask), op("aten.bernoulli_.float" + i, draw_ns, 0),
          op("aten.div_.Scalar" + i, 5, 0), unpriced("aten.mul.Tensor" + i, 5, mask)};
}

std::vector<UnitOp> concat(std::initializer_list<std::vector<UnitOp>> parts) {
  std::vector<UnitOp> out;
  for (const std::vector<UnitOp>& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

bool saves(const SelectiveOption& o, const std::string& key) {
  return std::find(o.save.begin(), o.save.end(), key) != o.save.end();
}

TEST(SelectiveOptions, DropoutMasksAreSavedWholeWithEveryLaterRandomCall) {
  // addmm#0 2 B/ns, the first mask 400 B / 26 ns, addmm#1 2.5, the second
  // mask 100 B / 26 ns: the second mask comes before the first.
  std::vector<UnitOp> ops = concat({{op("aten.addmm.default#0", 50, 100)}, dropout(0, 20, 400),
                                    {op("aten.addmm.default#1", 80, 200)}, dropout(1, 20, 100)});
  std::vector<SelectiveOption> options = selectiveOptions(ops, 5000);
  const std::vector<std::string> second_mask = {"aten.addmm.default#0", "aten.addmm.default#1",
                                                "aten.empty_like.default#1", "aten.bernoulli_.float#1",
                                                "aten.div_.Scalar#1"};
  bool found = false;
  for (const SelectiveOption& o : options) {
    found = found || o.save == second_mask;
    // Saving the first mask skips its draw in the replay: the second
    // dropout would then draw another mask, so it is saved as well.
    if (saves(o, "aten.bernoulli_.float#0")) {
      EXPECT_TRUE(saves(o, "aten.empty_like.default#0") && saves(o, "aten.div_.Scalar#0"));
      EXPECT_TRUE(saves(o, "aten.bernoulli_.float#1")) << o.label;
    }
    for (int n : {0, 1})
      EXPECT_EQ(saves(o, "aten.empty_like.default#" + std::to_string(n)),
                saves(o, "aten.bernoulli_.float#" + std::to_string(n)));
    EXPECT_FALSE(saves(o, "aten.mul.Tensor#0") || saves(o, "aten.mul.Tensor#1"));  // not priced
  }
  ASSERT_TRUE(found);
  const SelectiveOption& all = options.back();
  EXPECT_EQ(all.kept, 800);
  EXPECT_EQ(all.saved_ns, 50 + 80 + 2 * 26);

  // The cheapest first: the first mask alone would be the first prefix
  // (after torchtitan's rule); it comes with the second.
  ops = concat({dropout(0, 200, 100), {op("aten.addmm.default#0", 50, 1000)}, dropout(1, 20, 300)});
  options = selectiveOptions(ops, 5000);
  ASSERT_GE(options.size(), 2u);
  EXPECT_EQ(options[1].save,
            (std::vector<std::string>{"aten.empty_like.default#0", "aten.bernoulli_.float#0", "aten.div_.Scalar#0",
                                      "aten.empty_like.default#1", "aten.bernoulli_.float#1",
                                      "aten.div_.Scalar#1"}));

  // A later random call that cannot be saved: no earlier mask is saved.
  ops = concat({dropout(0, 200, 100), {op("aten.addmm.default#0", 50, 1000)},
                {op("aten.randn_like.default#0", 5, 0, 64)}});
  for (const SelectiveOption& o : selectiveOptions(ops, 5000)) EXPECT_FALSE(saves(o, "aten.bernoulli_.float#0"));

  // Another in-place call in the unit (it could mutate a saved output, which
  // the cache then no longer checks): no CPU dropout is saved.
  ops = concat({{op("aten.addmm.default#0", 50, 100), op("aten.relu_.default#0", 5, 0)}, dropout(0, 200, 100)});
  options = selectiveOptions(ops, 5000);
  ASSERT_FALSE(options.empty());
  for (const SelectiveOption& o : options) EXPECT_FALSE(saves(o, "aten.bernoulli_.float#0"));

  // CUDA's dropout is one random call, saved like a dropout.
  ops = {op("aten.addmm.default#0", 50, 100), op("aten.native_dropout.default#0", 20, 100),
         op("aten.addmm.default#1", 50, 100), op("aten.native_dropout.default#1", 20, 100)};
  bool first_saved = false;
  for (const SelectiveOption& o : selectiveOptions(ops, 5000)) {
    first_saved = first_saved || saves(o, "aten.native_dropout.default#0");
    EXPECT_TRUE(!saves(o, "aten.native_dropout.default#0") || saves(o, "aten.native_dropout.default#1"));
  }
  EXPECT_TRUE(first_saved);
}

TEST(SelectiveOptions, PricedLingeringOutputsAreSavedWithTheMasks) {
  // HF GPT-2's MLP on a CPU: c_fc's output is kept (gelu's input), the
  // gelu chain's are kept, c_proj's output lingers (the dropout consumes it,
  // freed in the forward, the mask born after it), and so does the mul's
  // (born after the mask, the last bytes autograd keeps: not priced).
  std::vector<UnitOp> ops = concat({{op("aten.addmm.default#0", 400, 1000), op("aten.mul.Tensor#0", 20, 1000),
                                     op("aten.pow.Tensor_Scalar#0", 20, 1000), op("aten.tanh.default#0", 30, 1000),
                                     op("aten.addmm.default#1", 400, 0, 250)},
                                    dropout(1, 40, 250)});
  std::vector<SelectiveOption> options = selectiveOptions(ops, 100000);
  const std::vector<std::string> matmuls_and_mask = {"aten.addmm.default#0", "aten.addmm.default#1",
                                                     "aten.empty_like.default#1", "aten.bernoulli_.float#1",
                                                     "aten.div_.Scalar#1"};
  const SelectiveOption* found = nullptr;
  for (const SelectiveOption& o : options)
    if (o.save == matmuls_and_mask) found = &o;
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->kept, 1250);
  EXPECT_EQ(found->lingering, 250);
  EXPECT_TRUE(found->lingering_priced);
}

TEST(SelectiveOptions, MatmulsFollowTorchtitanRecomputingEverySecondMm) {
  std::vector<UnitOp> ops = {
      op("aten.mm.default#0", 10, 100),
      op("aten._softmax.default#0", 10, 100),
      op("aten.mm.default#1", 10, 100),          // the second mm: recomputed
      op("aten.bmm.default#0", 10, 0, 100),      // consumed by the next call: held anyway
      op("aten.mm.default#2", 10, 0, 100),
      op("aten.mm.default#3", 10, 100),          // the fourth: recomputed
      op("aten.addmm.default#0", 10, 100),       // addmm is not counted
      op("aten.addmm.default#1", 10, 100),
      op("aten.view.default#0", 1, 0),
      op("aten._scaled_dot_product_flash_attention_for_cpu.default#0", 30, 100),
      op("aten.max.default#0", 5, 8)};
  std::vector<SelectiveOption> options = selectiveOptions(ops, 10000);
  ASSERT_FALSE(options.empty());
  EXPECT_EQ(options[0].label, "matmuls");
  EXPECT_EQ(options[0].save,
            (std::vector<std::string>{"aten.mm.default#0", "aten.bmm.default#0", "aten.mm.default#2",
                                      "aten.addmm.default#0", "aten.addmm.default#1",
                                      "aten._scaled_dot_product_flash_attention_for_cpu.default#0",
                                      "aten.max.default#0"}));
  EXPECT_EQ(options[0].kept, 408);
  EXPECT_EQ(options[0].lingering, 200);
  EXPECT_TRUE(isTorchtitanSaved("aten.linear.default#0"));
  EXPECT_TRUE(isCountedMatmul("aten.linear.default#3"));
  EXPECT_FALSE(isCountedMatmul("aten.addmm.default#0"));
  EXPECT_FALSE(isTorchtitanSaved("aten.gelu.default#0"));
  EXPECT_FALSE(isTorchtitanSaved("mm#0"));
}

TEST(SelectiveOptions, EffectKeepsBytesAndSavesTime) {
  UnitChain c;
  c.before_backward = {9000, 7000};
  SegmentEffect whole{1000, 5000, 300};
  SelectiveOption o{"x", {"aten.mm.default#0"}, 400, 120};
  // Not measured: the kept bytes on top of the whole replay (a bound).
  SegmentEffect e = selectiveEffect(c, 1, whole, o);
  EXPECT_EQ(e.dropped, 600);
  EXPECT_EQ(e.recompute_ns, 180);
  EXPECT_EQ(e.recompute_peak, 5400);
  // Measured: live when the backward begins, less what is dropped, plus what
  // the replay re-makes (the saved calls' memory is not re-made).
  o.replay_peak = 700;
  e = selectiveEffect(c, 1, whole, o);
  EXPECT_EQ(e.dropped, 600);
  EXPECT_EQ(e.recompute_peak, 7000 - 600 + 700);
  EXPECT_EQ(selectiveEffect(c, 0, whole, o).recompute_peak, 9000 - 600 + 700);
}

// Random options for every unit of a random chain.
void addRandomOptions(UnitChain& c, std::mt19937_64& rng) {
  c.selective.assign(c.size(), {});
  for (int k = 0; k < c.size(); ++k) {
    int count = static_cast<int>(rng() % 4);
    for (int i = 0; i < count && c.saved[k] > 1; ++i) {
      SelectiveOption o;
      o.label = "o" + std::to_string(i);
      o.save = {"aten.mm.default#" + std::to_string(i)};
      o.kept = static_cast<Bytes>(rng() % static_cast<uint64_t>(c.saved[k]));
      o.saved_ns = static_cast<Ns>(rng() % static_cast<uint64_t>(c.forward_ns[k] + 1));
      // Half measured (the exact replay), half not (the bound).
      if (rng() % 2) o.replay_peak = static_cast<Bytes>(rng() % static_cast<uint64_t>(c.born_peak[2 * k] + 1));
      c.selective[k].push_back(o);
    }
  }
}

TEST(SelectiveSolver, EqualsBruteForceOverUnitOptions) {
  int checked_selective = 0;
  for (int n : {1, 2, 3, 5, 7})
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      std::mt19937_64 rng(seed * 104729 + n);
      UnitChain c = testing::randomChain(n, rng);
      addRandomOptions(c, rng);
      SolverOptions o;
      o.kind = SegmentKind::Module;
      Solution minp = minimumPeak(c, o);
      ASSERT_TRUE(minp.feasible);
      for (double frac : {0.0, 0.2, 0.5, 0.8, 1.0}) {
        Bytes budget = minp.peak + static_cast<Bytes>(frac * (c.baseline_peak - minp.peak));
        Ns best = LLONG_MAX;
        testing::forEachUnitPlan(c, [&](const Segments& plan) {
          ChainPeak p = evaluateChain(c, plan);
          if (p.peak <= budget) best = std::min(best, p.recompute_ns);
        });
        SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed) +
                     " budget=" + std::to_string(budget));
        Solution s = solveOptimal(c, budget, o);
        ASSERT_TRUE(s.feasible);
        EXPECT_EQ(s.recompute_ns, best);
        ChainPeak check = evaluateChain(c, s.segments);
        EXPECT_EQ(check.peak, s.peak);
        EXPECT_LE(s.peak, budget);
        EXPECT_EQ(check.recompute_ns, s.recompute_ns);
        for (const Segment& seg : s.segments) {
          EXPECT_EQ(seg.first, seg.last);
          if (seg.selective()) {
            ++checked_selective;
            EXPECT_EQ(seg.save, c.selective[seg.first][seg.option - 1].save);
          }
        }
      }
    }
  EXPECT_GT(checked_selective, 0);  // the search does pick save-lists
}

TEST(SelectiveSolver, ASaveListThatCostsNothingBeatsWholeAtEqualPeak) {
  std::mt19937_64 rng(7);
  UnitChain c = testing::randomChain(4, rng);
  c.selective.assign(4, {});
  // Unit 2: a list that keeps 0 bytes but saves half its forward time.
  c.selective[2].push_back({"free", {"aten.mm.default#0"}, 0, c.forward_ns[2] / 2});
  Segments every = everyUnit(4);
  ChainPeak pe = evaluateChain(c, every);
  SolverOptions o;
  o.kind = SegmentKind::Module;
  Solution s = solveOptimal(c, pe.peak, o);
  ASSERT_TRUE(s.feasible);
  EXPECT_LE(s.recompute_ns, pe.recompute_ns - c.forward_ns[2] / 2);
}

}  // namespace
}  // namespace gcprof::advisor

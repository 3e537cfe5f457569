#include "solve/optimal_solver.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "saturating.h"
#include "solve/fixed_plans.h"

namespace gcprof::advisor {
namespace {

struct State {
  Ns cost = 0;
  Bytes dropped = 0;
  int from_pos = -1;  // predecessor: position and index in its front
  int from_idx = -1;
  bool segment = false;  // the step into this state was a segment [from_pos..pos-1]
  int option = 0;        // > 0: that segment is unit from_pos's selective option - 1
};

int maxLast(const UnitChain& c, int k, const SolverOptions& o) {
  int n = c.size();
  if (!o.tree_span_last.empty()) return std::max(k, o.tree_span_last[k]);
  if (o.kind == SegmentKind::Module) return k;
  if (o.max_segment_units > 0) return std::min(n - 1, k + o.max_segment_units - 1);
  return n - 1;
}

// Segment [k..j] quantities for j = k.., computed once per start position.
struct SweepCache {
  std::vector<Bytes> dropped, recompute_peak;
  std::vector<Ns> cost;
  SegmentSweep sweep;
  SweepCache(const UnitChain& c, int k) : sweep(c, k) {}
  void upTo(size_t count) {
    while (dropped.size() < count) {
      sweep.extend();
      dropped.push_back(sweep.dropped());
      recompute_peak.push_back(sweep.recomputePeak());
      cost.push_back(sweep.recomputeNs());
    }
  }
};

// Sorted by cost, keeping only states with strictly more D than any cheaper one.
bool prune(std::vector<State>& v, size_t max_front) {
  std::sort(v.begin(), v.end(), [](const State& a, const State& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.dropped > b.dropped;
  });
  std::vector<State> out;
  for (const State& s : v)
    if (out.empty() || s.dropped > out.back().dropped) out.push_back(s);
  bool thinned = false;
  if (out.size() > max_front) {
    // Keep the cheapest state of each of `max_front` equal slices of D (and
    // the one dropping most): every kept plan stays valid, only optimality
    // is no longer guaranteed, and the solution says so.
    Bytes lo = out.front().dropped, hi = out.back().dropped;
    double width = (static_cast<double>(hi) - static_cast<double>(lo) + 1) / static_cast<double>(max_front);
    std::vector<State> thin;
    std::vector<bool> taken(max_front + 1, false);
    for (const State& st : out) {  // by cost: the first in a slice is its cheapest
      size_t b = static_cast<size_t>(static_cast<double>(st.dropped - lo) / width);
      if (b > max_front) b = max_front;
      if (!taken[b]) {
        taken[b] = true;
        thin.push_back(st);
      }
    }
    if (thin.back().dropped != hi) thin.push_back(out.back());
    out.swap(thin);
    thinned = true;
  }
  v.swap(out);
  return thinned;
}

Segments reconstruct(const UnitChain& c, const std::vector<std::vector<State>>& fronts, int pos,
                     int idx) {
  Segments segs;
  while (pos > 0) {
    const State& s = fronts[pos][idx];
    if (s.segment) {
      Segment seg{s.from_pos, pos - 1, s.option, {}};
      if (s.option > 0) seg.save = c.selective[s.from_pos][s.option - 1].save;
      segs.push_back(seg);
    }
    int p = s.from_pos, i = s.from_idx;
    pos = p;
    idx = i;
  }
  std::reverse(segs.begin(), segs.end());
  return segs;
}

// A lower bound on the recompute still needed from position k with D bytes
// dropped so far: every later constraint asks for at least need[k] - D more
// bytes, and no segment starting at k or later drops bytes more cheaply
// than ratio[k] ns per byte. States that cannot beat the best plan known
// (cost_limit) are dropped, which keeps the search exact.
struct RemainingCost {
  std::vector<Bytes> need;
  std::vector<double> ratio;
  RemainingCost(const UnitChain& c, Bytes budget, const SolverOptions& o) {
    int n = c.size();
    need.assign(n + 1, 0);
    ratio.assign(n + 1, 1e300);
    for (int k = n - 1; k >= 0; --k) {
      // Checkpointing unit k lowers its own forward's moment at most to
      // the whole unit's checkpointed forward (no save-list frees more).
      need[k] = std::max({need[k + 1], sat::sub(c.checkpointedUnitPeak(k, k, k, 0), budget),
                          sat::sub(c.gap_peak[k], budget)});
      double best = ratio[k + 1];
      SegmentSweep sweep(c, k);
      for (int j = k; j <= maxLast(c, k, o); ++j) {
        sweep.extend();
        if (sweep.dropped() > 0 && o.allows(k, j))
          best = std::min(best, static_cast<double>(sweep.recomputeNs()) /
                                    static_cast<double>(sweep.dropped()));
      }
      if (k < static_cast<int>(c.selective.size()) && !c.selective[k].empty()) {
        SegmentSweep one(c, k);
        one.extend();
        SegmentEffect whole{one.dropped(), one.recomputePeak(), one.recomputeNs()};
        for (const SelectiveOption& opt : c.selective[k]) {
          if (!opt.lingering_priced) continue;
          SegmentEffect e = selectiveEffect(c, k, whole, opt);
          if (e.dropped > 0)
            best = std::min(best, static_cast<double>(e.recompute_ns) / static_cast<double>(e.dropped));
        }
      }
      ratio[k] = best;
    }
  }
  Ns atLeast(int k, Bytes dropped) const {
    Bytes missing = sat::sub(need[k], dropped);
    if (missing <= 0) return 0;
    if (ratio[k] >= 1e299) return std::numeric_limits<Ns>::max() / 4;  // cannot be met
    // Rounded down with a margin so that float error never prunes the optimum.
    return sat::fromDouble(static_cast<double>(missing) * ratio[k] * (1 - 1e-9));
  }
};

// The shared dynamic program over chain positions: fronts[k] holds the
// states reaching position k (recompute cost, bytes dropped D), each state
// extended by leaving unit k alone or by a segment starting at k.
// `feasibility_only` keeps one state (largest D) per position.
class ChainSearch {
 public:
  // `remaining`: the bound that prunes hopeless states; null for none.
  ChainSearch(const UnitChain& c, Bytes budget, const SolverOptions& o, bool feasibility_only,
              const RemainingCost* remaining)
      : c_(c), budget_(budget), o_(o), feasibility_only_(feasibility_only), remaining_(remaining),
        fronts_(c.size() + 1) {}

  Solution run() {
    Solution sol;
    int n = c_.size();
    fronts_[0].push_back({0, 0, -1, -1, false});
    for (int k = 0; k < n; ++k) {
      if (!keepFront(k)) sol.exact = false;
      sol.states += fronts_[k].size();
      SweepCache cache(c_, k);
      for (int idx = 0; idx < static_cast<int>(fronts_[k].size()); ++idx) {
        const State st = fronts_[k][idx];
        // Unit k's own moments: nothing to do here, even checkpointed.
        if (sat::sub(c_.checkpointedUnitPeak(k, k, k, 0), st.dropped) > budget_) continue;
        if (hopeless(st.cost, k, st.dropped)) continue;
        extendBySegments(k, idx, st, cache);
        if (!feasibility_only_) extendBySelective(k, idx, st, cache);
      }
    }
    std::vector<State>& end = fronts_[n];
    if (end.empty()) return sol;
    if (!feasibility_only_) prune(end, o_.max_front);
    int best = 0;
    for (int i = 1; i < static_cast<int>(end.size()); ++i)
      if (end[i].cost < end[best].cost) best = i;
    sol.feasible = true;
    sol.segments = reconstruct(c_, fronts_, n, best);
    ChainPeak p = evaluateChain(c_, sol.segments);
    sol.recompute_ns = p.recompute_ns;
    sol.peak = p.peak;
    return sol;
  }

 private:
  // A state that cannot beat the best plan known (RemainingCost).
  bool hopeless(Ns cost, int pos, Bytes dropped) const {
    return remaining_ && cost > sat::sub(o_.cost_limit, remaining_->atLeast(pos, dropped));
  }

  // Thins position k's front; false when that loses exactness.
  bool keepFront(int k) {
    std::vector<State>& here = fronts_[k];
    if (!feasibility_only_) return !prune(here, o_.max_front);
    if (here.size() > 1) {
      State keep = *std::max_element(here.begin(), here.end(), [](const State& a, const State& b) {
        return a.dropped < b.dropped;
      });
      here.assign(1, keep);
    }
    return true;
  }

  // Unit k left alone, then whole segments [k..j] while they can fit.
  void extendBySegments(int k, int idx, const State& st, SweepCache& cache) {
    Bytes D = st.dropped;
    if (sat::sub(c_.unit_peak[k], D) <= budget_ && sat::sub(c_.gap_peak[k], D) <= budget_ &&
        !hopeless(st.cost, k + 1, D))
      fronts_[k + 1].push_back({st.cost, D, k, idx, false});
    int last_max = maxLast(c_, k, o_);
    for (int j = k; j <= last_max; ++j) {
      if (j > k && (sat::sub(c_.checkpointedUnitPeak(j, k, j, 0), D) > budget_ ||
                    sat::sub(c_.gap_peak[j - 1], D) > budget_))
        break;
      cache.upTo(static_cast<size_t>(j - k + 1));
      size_t q = static_cast<size_t>(j - k);
      Ns cost = sat::add(st.cost, cache.cost[q]);
      if (cost > o_.cost_limit) break;  // recompute only grows with j
      if (!o_.allows(k, j)) continue;
      Bytes d = cache.dropped[q];
      if (sat::sub(cache.recompute_peak[q], D) > budget_) continue;
      if (sat::sub(c_.gap_peak[j], sat::add(D, d)) > budget_) continue;
      if (hopeless(cost, j + 1, sat::add(D, d))) continue;
      fronts_[j + 1].push_back({cost, sat::add(D, d), k, idx, true});
    }
  }

  // Selective checkpoints of unit k alone (chain/selective_options.h): they
  // never drop more than the whole unit, so a feasibility search skips them.
  void extendBySelective(int k, int idx, const State& st, SweepCache& cache) {
    if (k >= static_cast<int>(c_.selective.size()) || !o_.allows(k, k)) return;
    Bytes D = st.dropped;
    cache.upTo(1);
    SegmentEffect whole{cache.dropped[0], cache.recompute_peak[0], cache.cost[0]};
    for (size_t opt = 0; opt < c_.selective[k].size(); ++opt) {
      if (!c_.selective[k][opt].lingering_priced) continue;  // priced by the simulator only
      SegmentEffect e = selectiveEffect(c_, k, whole, c_.selective[k][opt]);
      Ns cost = st.cost + e.recompute_ns;
      if (cost > o_.cost_limit || e.recompute_peak - D > budget_ ||
          sat::sub(c_.checkpointedUnitPeak(k, k, k, static_cast<int>(opt) + 1), D) > budget_ ||
          c_.gap_peak[k] - (D + e.dropped) > budget_ || hopeless(cost, k + 1, D + e.dropped))
        continue;
      fronts_[k + 1].push_back({cost, D + e.dropped, k, idx, true, static_cast<int>(opt) + 1});
    }
  }

  const UnitChain& c_;
  const Bytes budget_;
  const SolverOptions& o_;
  const bool feasibility_only_;
  const RemainingCost* remaining_;
  std::vector<std::vector<State>> fronts_;
};

Solution run(const UnitChain& c, Bytes budget, const SolverOptions& o, bool feasibility_only) {
  if (c.outside > budget || c.size() == 0) {
    Solution sol;
    sol.feasible = c.size() == 0 && c.outside <= budget;
    return sol;
  }
  std::optional<RemainingCost> remaining;
  if (!feasibility_only && o.cost_limit < std::numeric_limits<Ns>::max()) remaining.emplace(c, budget, o);
  return ChainSearch(c, budget, o, feasibility_only, remaining ? &*remaining : nullptr).run();
}

template <typename Feasible>
Solution bisectBudget(const UnitChain& c, Feasible feasible) {
  // Bytes are integers: the smallest feasible budget is some plan's peak.
  Bytes lo = std::max<Bytes>(0, c.outside) - 1;  // infeasible below what no plan changes
  Solution hi_sol = feasible(c.baseline_peak);
  Bytes hi = c.baseline_peak;
  if (!hi_sol.feasible) return hi_sol;
  hi = std::min(hi, hi_sol.peak);
  while (sat::sub(hi, lo) > 1) {
    Bytes mid = sat::midpoint(lo, hi);
    Solution s = feasible(mid);
    if (s.feasible) {
      hi_sol = s;
      hi = std::min(mid, s.peak);
    } else {
      lo = mid;
    }
  }
  return hi_sol;
}

}  // namespace

bool SolverOptions::allows(int first, int last) const {
  if (first > last) return false;
  if (!tree_span_last.empty()) {
    bool alone = first == last && !(first < static_cast<int>(tree_whole_only.size()) && tree_whole_only[first]);
    return alone || tree_span_last[first] == last;
  }
  if (kind == SegmentKind::Module) return first == last;
  return max_segment_units <= 0 || last - first + 1 <= max_segment_units;
}

bool SolverOptions::allows(const Segments& plan) const {
  return std::all_of(plan.begin(), plan.end(), [&](const Segment& s) { return allows(s.first, s.last); });
}

SolverOptions defaultSolverOptions(int units, SegmentKind kind) {
  SolverOptions o;
  o.kind = kind;
  if (units > 64) {
    // Module plans extend each state once per unit: thousands of states are
    // cheap. Region plans extend each state by every segment length.
    o.max_front = kind == SegmentKind::Module ? 1024 : 64;
    int root = static_cast<int>(std::lround(std::sqrt(static_cast<double>(units))));
    o.max_segment_units = std::max(16, 2 * root);
  }
  return o;
}

Solution solveOptimal(const UnitChain& chain, Bytes budget, const SolverOptions& options) {
  // The best plan known so far bounds the answer's recompute, which prunes
  // most of the search. Candidates: the budget-blind plans, any feasible
  // plan (the feasibility search is exact and cheap), and a coarse search.
  Solution best;
  auto offer = [&](const Solution& s) {
    if (s.feasible && (!best.feasible || s.recompute_ns < best.recompute_ns)) best = s;
  };
  for (const Segments& plan : {Segments{}, everyUnit(chain.size()),
                               uniformPlan(chain.size(), options.kind)}) {
    if (!options.allows(plan)) continue;  // uniform regions are not tree segments
    ChainPeak p = evaluateChain(chain, plan);
    if (p.peak > budget || p.recompute_ns > options.cost_limit) continue;
    Solution s;
    s.feasible = true;
    s.segments = plan;
    s.peak = p.peak;
    s.recompute_ns = p.recompute_ns;
    offer(s);
  }
  Solution any = anyFeasible(chain, budget, options);
  if (any.recompute_ns <= options.cost_limit) offer(any);
  if (!any.feasible) return any;  // no plan fits: exactly infeasible
  SolverOptions o = options;
  SolverOptions coarse = o;
  coarse.max_front = std::min<size_t>(o.max_front, 8);
  if (best.feasible) coarse.cost_limit = std::min(o.cost_limit, best.recompute_ns);
  offer(run(chain, budget, coarse, false));
  if (best.feasible) o.cost_limit = std::min(o.cost_limit, best.recompute_ns);
  Solution main = run(chain, budget, o, false);
  size_t states = any.states + main.states;
  // A thinned search may lose the paths to the known plan; keep the better.
  bool exact = main.exact;
  offer(main);
  best.exact = exact;
  best.states = states;
  return best;
}

Solution anyFeasible(const UnitChain& chain, Bytes budget, const SolverOptions& options) {
  SolverOptions unlimited = options;  // feasibility alone: recompute does not matter
  unlimited.cost_limit = std::numeric_limits<Ns>::max();
  return run(chain, budget, unlimited, true);
}

Solution minimumPeak(const UnitChain& chain, const SolverOptions& options) {
  return bisectBudget(chain, [&](Bytes b) { return anyFeasible(chain, b, options); });
}

Solution leastPeakWithin(const UnitChain& chain, Ns cost_limit, const SolverOptions& options) {
  SolverOptions o = options;
  o.cost_limit = cost_limit;
  return bisectBudget(chain, [&](Bytes b) { return solveOptimal(chain, b, o); });
}

}  // namespace gcprof::advisor

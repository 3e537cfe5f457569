#include "scale/chain_scaling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "byte_text.h"
#include "advice_error.h"

namespace gcprof::advisor {
namespace {

std::string runText(const SizedChain& r) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "run %lld (size %g)", static_cast<long long>(r.run), r.size);
  return buf;
}

void checkSameUnits(const std::vector<SizedChain>& runs) {
  const SizedChain& first = runs.front();
  for (const SizedChain& r : runs) {
    const auto& a = first.chain.names;
    const auto& b = r.chain.names;
    if (a == b) continue;
    std::string why;
    if (a.size() != b.size()) {
      why = std::to_string(a.size()) + " units vs " + std::to_string(b.size());
    } else {
      for (size_t k = 0; k < a.size(); ++k)
        if (a[k] != b[k]) {
          why = "unit " + std::to_string(k) + " is " + a[k] + " vs " + b[k];
          break;
        }
    }
    throw AdviceError(runText(first) + " and " + runText(r) + " have different units (" + why +
                      "): they are not one job at two sizes; record the same command with only "
                      "the size changed, or pick the runs with --size-of");
  }
}

// Memory per sample is never negative: a peak that does not grow (or
// shrinks) means the runs are of different jobs, or the size is wrong.
void checkGrowth(const std::vector<SizedChain>& runs) {
  for (size_t i = 1; i < runs.size(); ++i) {
    const SizedChain& lo = runs[i - 1];
    const SizedChain& hi = runs[i];
    if (lo.size == hi.size)
      throw AdviceError(runText(lo) + " and " + runText(hi) +
                        " have the same size; give each run a different one");
    if (hi.chain.baseline_peak <= lo.chain.baseline_peak)
      throw AdviceError(runText(hi) + " peaks at " + formatBytes(hi.chain.baseline_peak) +
                        ", not above " + runText(lo) + " (" + formatBytes(lo.chain.baseline_peak) +
                        "): the peak does not grow with the size, so no growth can be fitted. "
                        "Are the sizes right, and are these runs of one job?");
  }
}

std::vector<SizePoint> pointsOf(const std::vector<SizedChain>& runs,
                                const std::function<double(const UnitChain&)>& value) {
  std::vector<SizePoint> p;
  for (const SizedChain& r : runs) p.push_back({r.size, value(r.chain)});
  return p;
}

int64_t predicted(const std::vector<SizedChain>& runs, GrowthForm form, double size,
                  const std::function<double(const UnitChain&)>& value) {
  double v = fitBytes(pointsOf(runs, value), form).at(size);
  return v <= 0 ? 0 : static_cast<int64_t>(std::llround(v));
}

// Live bytes: what the step adds above the persistent part is fitted, the
// persistent part comes from its own model.
int64_t predictedLive(const std::vector<SizedChain>& runs, GrowthForm form, double size,
                      const std::optional<PersistentModel>& persistent,
                      const std::function<double(const UnitChain&)>& value) {
  if (!persistent) return predicted(runs, form, size, value);
  double above = fitBytes(pointsOf(runs, [&](const UnitChain& c) {
                             return value(c) - static_cast<double>(c.persistent);
                           }), form).at(size);
  return std::max<int64_t>(0, std::llround(above) + persistent->at(size));
}

int64_t predictedTime(const std::vector<SizedChain>& runs, GrowthForm form, double size,
                      const std::function<double(const UnitChain&)>& value) {
  return std::llround(timeAt(pointsOf(runs, value), form, size));
}

using Moments = std::vector<std::vector<Bytes>> UnitChain::*;

// Entry k's moments when every run has the same number of them (runs of one
// job do; chains made by hand have none).
bool haveMoments(const std::vector<SizedChain>& runs, Moments moments, size_t k) {
  const auto& first = runs.front().chain.*moments;
  if (k >= first.size() || first[k].empty()) return false;
  for (const SizedChain& r : runs) {
    const auto& m = r.chain.*moments;
    if (k >= m.size() || m[k].size() != first[k].size()) return false;
  }
  return true;
}

using Instants = std::vector<std::vector<std::vector<Bytes>>> UnitChain::*;

// Moment j of entry k's instants when every run has the same number of them
// (UnitChain::*_instants: the same allocations in the same order).
bool haveInstants(const std::vector<SizedChain>& runs, Instants instants, size_t k, size_t j) {
  auto count = [&](const UnitChain& c) -> size_t {
    const auto& v = c.*instants;
    return k < v.size() && j < v[k].size() ? v[k][j].size() : 0;
  };
  size_t n = count(runs.front().chain);
  if (n == 0) return false;
  for (const SizedChain& r : runs)
    if (count(r.chain) != n) return false;
  return true;
}

template <typename T>
void scaleVector(const std::vector<SizedChain>& runs, GrowthForm form, double size,
                 std::vector<T> UnitChain::*field, UnitChain& out,
                 const std::optional<PersistentModel>& live = std::nullopt, bool time = false,
                 Moments moments = nullptr, Instants instants = nullptr) {
  size_t n = (runs.front().chain.*field).size();
  for (const SizedChain& r : runs)
    if ((r.chain.*field).size() != n)
      throw AdviceError(runText(runs.front()) + " and " + runText(r) +
                        " have chains of different shapes; record them with the same --units");
  (out.*field).assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    if (time) {
      (out.*field)[k] = predictedTime(runs, form, size, [&](const UnitChain& c) {
        return static_cast<double>((c.*field)[k]);
      });
    } else if (moments && haveMoments(runs, moments, k)) {
      // A maximum of moments that each grow with the size, the largest at
      // one size not the largest at another: fit each, then take the
      // maximum (a line through the maxima would cut below it).
      // Within a moment, the same again with its instants (the highest
      // instant of a region moves too); the moment itself where the runs'
      // instants do not pair up.
      Bytes most = 0;
      for (size_t j = 0; j < (runs.front().chain.*moments)[k].size(); ++j) {
        if (instants && haveInstants(runs, instants, k, j)) {
          for (size_t i = 0; i < (runs.front().chain.*instants)[k][j].size(); ++i)
            most = std::max<Bytes>(most, predictedLive(runs, form, size, live, [&](const UnitChain& c) {
                                     return static_cast<double>((c.*instants)[k][j][i]);
                                   }));
          continue;
        }
        most = std::max<Bytes>(most, predictedLive(runs, form, size, live, [&](const UnitChain& c) {
                                 return static_cast<double>((c.*moments)[k][j]);
                               }));
      }
      (out.*field)[k] = most;
    } else {
      (out.*field)[k] = predictedLive(runs, form, size, live, [&](const UnitChain& c) {
        return static_cast<double>((c.*field)[k]);
      });
    }
  }
}

// UnitChain::mid_after_arguments: live bytes, each step's moment fitted on
// its own (scaleVector). A moment that is 0 in every run (no arguments
// freed in that step) stays 0 rather than becoming the persistent part.
Bytes scaledMidAfterArguments(const std::vector<SizedChain>& runs, GrowthForm form, double size,
                              const std::optional<PersistentModel>& persistent) {
  auto value = [](const UnitChain& c) { return static_cast<double>(c.mid_after_arguments); };
  const size_t moments = runs.front().chain.mid_after_arguments_moments.size();
  bool paired = moments > 0;
  for (const SizedChain& r : runs) paired = paired && r.chain.mid_after_arguments_moments.size() == moments;
  if (!paired) {
    bool any = false;
    for (const SizedChain& r : runs) any = any || r.chain.mid_after_arguments > 0;
    return any ? predictedLive(runs, form, size, persistent, value) : 0;
  }
  Bytes most = 0;
  for (size_t j = 0; j < moments; ++j) {
    bool any = false;
    for (const SizedChain& r : runs) any = any || r.chain.mid_after_arguments_moments[j] > 0;
    if (!any) continue;
    most = std::max<Bytes>(most, predictedLive(runs, form, size, persistent, [&](const UnitChain& c) {
                             return static_cast<double>(c.mid_after_arguments_moments[j]);
                           }));
  }
  return most;
}

}  // namespace

std::vector<double> sizesWithoutArguments(const std::vector<SizedChain>& runs) {
  std::set<double> out;
  auto check = [&](const std::function<Bytes(const UnitChain&)>& value) {
    bool found = false;
    for (const SizedChain& r : runs) found = found || value(r.chain) > 0;
    if (!found) return;
    for (const SizedChain& r : runs)
      if (value(r.chain) == 0) out.insert(r.size);
  };
  size_t units = runs.empty() ? 0 : runs.front().chain.held_arguments.size();
  for (size_t k = 0; k < units; ++k)
    check([&](const UnitChain& c) { return k < c.held_arguments.size() ? c.held_arguments[k] : 0; });
  check([](const UnitChain& c) { return c.mid_after_arguments; });
  return {out.begin(), out.end()};
}

GrowthForm peakGrowthForm(const std::vector<SizedChain>& runs, SizeMeasure measure) {
  // Above the persistent part, whose workspaces follow no form at all.
  std::vector<SizePoint> points = pointsOf(runs, [](const UnitChain& c) {
    return static_cast<double>(c.baseline_peak - c.persistent);
  });
  for (SizePoint& p : points) p.size = fitVariable(p.size, measure);
  return growthFormOf(points);
}

ChainScaling::ChainScaling(std::vector<SizedChain> runs, GrowthForm form, SizeMeasure measure)
    : runs_(std::move(runs)), form_(form), measure_(measure) {
  if (runs_.size() < 2)
    throw AdviceError("what-if needs runs at two or more sizes (got " + std::to_string(runs_.size()) +
                      "); record the job again at another size with --name batch=N");
  std::sort(runs_.begin(), runs_.end(),
            [](const SizedChain& a, const SizedChain& b) { return a.size < b.size; });
  checkSameUnits(runs_);
  checkGrowth(runs_);
  if (form_ == GrowthForm::Quadratic && runs_.size() < 3)
    throw AdviceError("a quadratic fit needs runs at three or more sizes (got " +
                      std::to_string(runs_.size()) + ")");
  // From here on sizes are the fit variable (checks above name the sizes).
  for (SizedChain& r : runs_) r.size = fitVariable(r.size, measure_);
  std::vector<PersistentSample> samples;
  for (const SizedChain& r : runs_)
    if (!r.persistent_allocations.empty())
      samples.push_back({r.size, r.chain.persistent, r.persistent_allocations});
  if (samples.size() == runs_.size()) persistent_ = persistentModel(samples);
}

UnitChain ChainScaling::at(double size) const { return atVariable(fitVariable(size, measure_)); }

UnitChain ChainScaling::atVariable(double size) const {
  const UnitChain& shape = runs_.back().chain;
  UnitChain c;
  c.names = shape.names;
  scaleVector(runs_, form_, size, &UnitChain::forward_ns, c, std::nullopt, true);
  scaleVector(runs_, form_, size, &UnitChain::gap_ns, c, std::nullopt, true);
  scaleVector(runs_, form_, size, &UnitChain::unit_peak, c, persistent_, false, &UnitChain::unit_peak_moments,
              &UnitChain::unit_peak_instants);
  scaleVector(runs_, form_, size, &UnitChain::backward_peak, c, persistent_, false,
              &UnitChain::backward_peak_moments, &UnitChain::backward_peak_instants);
  scaleVector(runs_, form_, size, &UnitChain::gap_peak, c, persistent_, false, &UnitChain::gap_peak_moments,
              &UnitChain::gap_peak_instants);
  scaleVector(runs_, form_, size, &UnitChain::before_backward, c, persistent_, false,
              &UnitChain::before_backward_moments);
  scaleVector(runs_, form_, size, &UnitChain::born_kept, c, std::nullopt, false, &UnitChain::born_kept_moments);
  scaleVector(runs_, form_, size, &UnitChain::born_peak, c, std::nullopt, false, &UnitChain::born_peak_moments);
  scaleVector(runs_, form_, size, &UnitChain::saved, c);
  // Drop buckets by (last unit, first unit); one a run lacks dropped nothing there.
  c.drops.assign(shape.size(), {});
  for (int last = 0; last < shape.size(); ++last) {
    std::set<int> firsts;
    for (const SizedChain& r : runs_)
      for (const DropBucket& b : r.chain.drops[last]) firsts.insert(b.first);
    for (int first : firsts) {
      Bytes bytes = predicted(runs_, form_, size, [&](const UnitChain& rc) {
        for (const DropBucket& b : rc.drops[last])
          if (b.first == first) return static_cast<double>(b.bytes);
        return 0.0;
      });
      c.drops[last].push_back({first, bytes});
    }
  }
  auto scalar = [&](auto field, const std::optional<PersistentModel>& live) {
    return predictedLive(runs_, form_, size, live,
                         [&](const UnitChain& rc) { return static_cast<double>(rc.*field); });
  };
  c.outside = scalar(&UnitChain::outside, persistent_);
  c.outside_where = shape.outside_where;
  c.baseline_peak = scalar(&UnitChain::baseline_peak, persistent_);
  c.step_ns = predictedTime(runs_, form_, size, [](const UnitChain& rc) { return static_cast<double>(rc.step_ns); });
  c.persistent = scalar(&UnitChain::persistent, persistent_);
  scaleVector(runs_, form_, size, &UnitChain::held_arguments, c);
  c.mid_after_arguments = scaledMidAfterArguments(runs_, form_, size, persistent_);
  c.steady_step = shape.steady_step;
  c.complete_steps = shape.complete_steps;
  return c;
}

FitCheck ChainScaling::check() const {
  FitCheck worst;
  // The sizes a line through the two largest is drawn through (fitBytes).
  bool two_largest = form_ == GrowthForm::Affine && runs_.size() >= 3;
  for (size_t r = 0; r < runs_.size(); ++r) {
    const UnitChain& rec = runs_[r].chain;
    UnitChain got = atVariable(runs_[r].size);
    auto consider = [&](Bytes predicted, Bytes recorded, const std::string& number) {
      Bytes miss = std::llabs(predicted - recorded);
      if (miss <= worst.miss) return;
      worst = {sizeOfVariable(runs_[r].size, measure_), miss, recorded, rec.baseline_peak, number,
               two_largest && r + 2 < runs_.size()};
    };
    auto each = [&](const std::vector<Bytes>& p, const std::vector<Bytes>& q, auto name) {
      for (size_t k = 0; k < p.size() && k < q.size(); ++k) consider(p[k], q[k], name(k));
    };
    auto unit = [&](size_t k) { return k < rec.names.size() ? rec.names[k] : std::to_string(k); };
    each(got.unit_peak, rec.unit_peak, [&](size_t k) { return "peak in " + unit(k); });
    each(got.gap_peak, rec.gap_peak, [&](size_t k) { return "peak after " + unit(k); });
    each(got.before_backward, rec.before_backward,
         [&](size_t k) { return "live before " + unit(k) + "'s backward"; });
    // Forward positions: unit k's forward is 2k, the gap after it 2k+1.
    auto position = [&](size_t k) { return (k % 2 ? "the gap after " : "") + unit(k / 2) + "'s forward"; };
    each(got.born_kept, rec.born_kept, [&](size_t k) { return "bytes kept from " + position(k); });
    each(got.born_peak, rec.born_peak, [&](size_t k) { return "most bytes of " + position(k); });
    each(got.saved, rec.saved, [&](size_t k) { return "saved by " + unit(k); });
    consider(got.outside, rec.outside, "memory no plan changes");
    each(got.backward_peak, rec.backward_peak, [&](size_t k) { return "peak in " + unit(k) + "'s backward"; });
    each(got.held_arguments, rec.held_arguments,
         [&](size_t k) { return "arguments a checkpoint at " + unit(k) + " holds"; });
    consider(got.mid_after_arguments, rec.mid_after_arguments,
             "live after the checkpoints' arguments were freed in the last gap");
    consider(got.baseline_peak, rec.baseline_peak, "the peak");
  }
  return worst;
}

}  // namespace gcprof::advisor

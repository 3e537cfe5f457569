#include "series_assignment.h"

#include "memory/memory_curve.h"
#include "units/module_stats.h"
#include "units/unit_selection.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

namespace gcprof::view {
namespace {

// "layers.12" -> ("layers", true); "attn" -> ("", false)
std::pair<std::string, bool> numberedPrefix(const std::string& name) {
  size_t dot = name.rfind('.');
  if (dot == std::string::npos || dot + 1 == name.size()) return {"", false};
  for (size_t i = dot + 1; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return {"", false};
  return {name.substr(0, dot), true};
}

// Step boundaries (starts and ends) in time order; a run without steps is
// treated as one step spanning its module ranges.
std::vector<Ns> stepBoundaries(const Trace& t) {
  std::vector<Ns> b;
  for (const Step& s : t.steps) {
    b.push_back(s.start);
    if (s.end > s.start) b.push_back(s.end);
  }
  if (b.empty() && !t.ranges.empty()) {
    Ns lo = t.ranges.front().start, hi = lo;
    for (const Range& r : t.ranges) hi = std::max(hi, r.end);
    b = {lo, hi};
  }
  std::sort(b.begin(), b.end());
  return b;
}

// Whether an allocation is alive across the first boundary strictly after
// it. Rows come in time order: the search goes on from the last row's
// boundary (a binary search again where a row is earlier than the last).
class BoundaryCrossing {
 public:
  explicit BoundaryCrossing(const std::vector<Ns>& b) : b_(b), next_(b.begin()) {}
  bool operator()(const Allocation& a) {
    if (a.alloc < last_) next_ = std::upper_bound(b_.begin(), b_.end(), a.alloc);
    while (next_ != b_.end() && *next_ <= a.alloc) ++next_;
    last_ = a.alloc;
    return next_ != b_.end() && (!a.freed() || a.free > *next_);
  }

 private:
  const std::vector<Ns>& b_;
  std::vector<Ns>::const_iterator next_;
  Ns last_ = INT64_MIN;
};

constexpr int kUnknown = -2;
// Parent chains deeper than this are damaged data (a cycle), not a model.
constexpr size_t kMaxNesting = 1024;

}  // namespace

std::vector<std::string> SeriesAssignment::detectUnits(const Trace& trace) {
  return detectUnits(trace, advisor::primaryFilter(trace));
}

std::vector<std::string> SeriesAssignment::detectUnits(const Trace& trace, const advisor::AllocationFilter& filter) {
  // The advisor's own rule, so the GUI colours the units `advise` would use.
  try {
    return advisor::selectUnits(advisor::moduleStats(trace, filter), "auto").names;
  } catch (const std::exception&) {
    // No unit the advisor accepts (no steps, overlapping modules): the GUI
    // still colours something, so it guesses below (for colours only; no plan
    // is ever made from these).
  }
  // prefix -> names in order of first forward appearance
  std::map<std::string, std::vector<std::string>> numbered;
  std::map<int, std::vector<std::string>> any;
  std::map<std::string, bool> seen;
  std::vector<std::string> order;
  for (const Range& r : trace.ranges) {
    // Module ranges from the python shim, and any range marked forward (the
    // C API and NVTX users mark layers that way too).
    if (r.phase != Phase::Forward || r.name.empty()) continue;
    if (seen[r.name]) continue;
    seen[r.name] = true;
    any[r.depth].push_back(r.name);
    auto [prefix, ok] = numberedPrefix(r.name);
    if (ok) numbered[prefix].push_back(r.name);
  }
  // Repeated groups nested in another group's members ("blocks.0.heads.#"
  // inside "blocks.#") are parts of units, not units.
  auto nested = [&](const std::string& prefix) {
    for (const auto& [other, names] : numbered)
      for (const std::string& n : names)
        if (prefix.compare(0, n.size() + 1, n + ".") == 0) return true;
    return false;
  };
  const std::vector<std::string>* best = nullptr;
  for (const auto& [prefix, names] : numbered)
    if (names.size() >= 2 && !nested(prefix) && (!best || names.size() > best->size())) best = &names;
  if (best) return *best;
  for (auto& [depth, names] : any)
    if (names.size() >= 2) return names;
  return {};
}

SeriesAssignment::SeriesAssignment(const Trace& trace, std::vector<std::string> unit_names) {
  // Memory space: the advisor's (a run with device allocations is about
  // device memory, its tensors when any were reported).
  const advisor::AllocationFilter filter = advisor::primaryFilter(trace);
  space_.device = filter.device;
  if (unit_names.empty()) unit_names = detectUnits(trace, filter);
  std::unordered_map<std::string, int> unit_of_name;
  for (size_t i = 0; i < unit_names.size(); ++i) {
    units_.push_back({unit_names[i], unitColour(static_cast<int>(i))});
    unit_of_name.emplace(unit_names[i], static_cast<int>(i));
  }

  // A range belongs to the unit named by it or by one of its name's prefixes
  // ("layers.3.attn" -> "layers.3"); unnamed ranges (NVTX, user) inherit from
  // the enclosing range, as does the phase.
  const auto& ranges = trace.ranges;
  std::unordered_map<int64_t, size_t> index_of_id;
  index_of_id.reserve(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) index_of_id.emplace(ranges[i].id, i);
  auto ownUnit = [&](const Range& r) {
    std::string name = r.name;
    while (!name.empty()) {
      auto it = unit_of_name.find(name);
      if (it != unit_of_name.end()) return it->second;
      size_t dot = name.rfind('.');
      if (dot == std::string::npos) break;
      name.resize(dot);
    }
    return -1;
  };
  // unit(r) = its own unit, else its parent's; phase(r) = its own phase
  // unless User, else its parent's. Iterative so deep chains cannot overflow.
  auto resolve = [&](auto own, std::vector<int>& memo) {
    memo.assign(ranges.size(), kUnknown);
    std::vector<size_t> chain;
    for (size_t i = 0; i < ranges.size(); ++i) {
      chain.clear();
      size_t j = i;
      int value = -1;
      while (true) {
        if (memo[j] != kUnknown) { value = memo[j]; break; }
        chain.push_back(j);
        int v = own(ranges[j]);
        if (v >= 0) { value = v; break; }
        auto p = index_of_id.find(ranges[j].parent);
        if (ranges[j].parent == 0 || p == index_of_id.end() || chain.size() > kMaxNesting) break;
        j = p->second;
      }
      for (size_t k : chain) memo[k] = value;
    }
  };
  resolve([&](const Range& r) { return ownUnit(r); },
          range_unit_);
  std::vector<int> phase;
  resolve([](const Range& r) { return r.phase == Phase::User ? -1 : static_cast<int>(r.phase); },
          phase);

  const std::vector<Ns> bounds = stepBoundaries(trace);
  BoundaryCrossing crosses(bounds);
  auto seriesOfRange = [&](int64_t range) {
    uint16_t s = kSeriesOther;
    auto it = range != 0 ? index_of_id.find(range) : index_of_id.end();
    if (it != index_of_id.end()) {
      int u = range_unit_[it->second];
      if (u >= 0 && phase[it->second] == static_cast<int>(Phase::Forward))
        s = static_cast<uint16_t>(kFirstUnitSeries + u);
    }
    return s;
  };
  // Neighbouring rows mostly share their range: its series is kept.
  int64_t last_range = 0;
  uint16_t last_series = seriesOfRange(0);
  series_.resize(trace.allocations.size());
  for (size_t i = 0; i < trace.allocations.size(); ++i) {
    const Allocation& a = trace.allocations[i];
    if (!filter.matches(a)) { series_[i] = kSeriesIgnored; continue; }
    if (crosses(a)) { series_[i] = kSeriesPersistent; continue; }
    if (a.range != last_range) {
      last_range = a.range;
      last_series = seriesOfRange(a.range);
    }
    series_[i] = last_series;
  }
}

int SeriesAssignment::unitIndex(const std::string& name) const {
  for (size_t i = 0; i < units_.size(); ++i)
    if (units_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string SeriesAssignment::seriesName(uint16_t s) const {
  if (s == kSeriesPersistent) return "persistent";
  if (s == kSeriesOther) return "other";
  size_t u = s - kFirstUnitSeries;
  return u < units_.size() ? "activations " + units_[u].name : "?";
}

Rgba SeriesAssignment::seriesColour(uint16_t s) const {
  if (s == kSeriesPersistent) return palette::kPersistent;
  if (s == kSeriesOther) return palette::kOther;
  size_t u = s - kFirstUnitSeries;
  return u < units_.size() ? units_[u].colour : palette::kOther;
}

}  // namespace gcprof::view

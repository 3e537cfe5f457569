#include "model/step_layout.h"

#include <algorithm>
#include <climits>
#include <unordered_map>

#include "model/module_stats.h"

namespace gcprof::advisor {

std::pair<Ns, Ns> runSpan(const Trace& t) {
  Ns lo = INT64_MAX, hi = INT64_MIN;
  for (const Allocation& a : t.allocations) {
    lo = std::min(lo, a.alloc);
    hi = std::max(hi, std::max(a.alloc, a.free));
  }
  for (const Range& r : t.ranges) {
    lo = std::min(lo, r.start);
    hi = std::max(hi, r.end);
  }
  if (lo > hi) lo = hi = 0;
  return {lo, hi};
}

namespace {

struct Span {
  Ns fs = INT64_MAX, fe = INT64_MIN, bs = INT64_MAX, be = INT64_MIN;
  Ns forward_ns = 0;
  bool device = true;
  int forwards = 0, backwards = 0;
};

std::string checkChain(const std::vector<Span>& spans, const std::vector<std::string>& names,
                       std::vector<UnitWindow>& out) {
  size_t n = spans.size();
  for (size_t k = 0; k < n; ++k) {
    if (spans[k].forwards == 0) return "no forward of " + names[k];
    if (spans[k].backwards == 0) return "no backward of " + names[k];
  }
  // Forward 0..N-1 then backward N-1..0, each starting where the previous ended.
  for (size_t k = 0; k + 1 < n; ++k)
    if (spans[k + 1].fs < spans[k].fe)
      return "forward of " + names[k + 1] + " starts before " + names[k] + "'s ends";
  if (spans[n - 1].bs < spans[n - 1].fe)
    return "backward of " + names[n - 1] + " starts before its forward ends";
  for (size_t k = n - 1; k > 0; --k)
    if (spans[k - 1].bs < spans[k].be)
      return "backward of " + names[k - 1] + " starts before " + names[k] + "'s ends";
  out.resize(n);
  for (size_t k = 0; k < n; ++k) {
    out[k] = {spans[k].fs, spans[k].fe, spans[k].bs, spans[k].be, spans[k].forward_ns,
              spans[k].device};
  }
  return "";
}

}  // namespace

RunLayout stepLayouts(const Trace& trace, const std::vector<std::string>& units) {
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < units.size(); ++i) index[units[i]] = i;

  RunLayout layout;
  std::unordered_map<int64_t, size_t> step_at;
  for (const Step& s : trace.steps) {
    step_at[s.index] = layout.steps.size();
    layout.steps.push_back({s.index, s.start, s.end, {}, false, ""});
  }
  bool pseudo = layout.steps.empty();
  if (pseudo) {
    // No step markers: the whole run is one step.
    auto [lo, hi] = runSpan(trace);
    layout.steps.push_back({-1, lo, hi, {}, false, ""});
  }

  std::vector<std::vector<Span>> spans(layout.steps.size(), std::vector<Span>(units.size()));
  for (const Range& r : trace.ranges) {
    if (r.domain != RangeDomain::Module || r.phase == Phase::User) continue;
    auto u = index.find(r.name);
    if (u == index.end()) continue;
    size_t si = 0;
    if (!pseudo) {
      auto it = step_at.find(r.step);
      if (it == step_at.end()) continue;  // outside every step: carried as recorded
      si = it->second;
    }
    Span& sp = spans[si][u->second];
    if (r.phase == Phase::Forward) {
      sp.fs = std::min(sp.fs, r.start);
      sp.fe = std::max(sp.fe, r.end);
      sp.forward_ns += rangeDuration(r);
      sp.device = sp.device && r.device_ns >= 0;
      ++sp.forwards;
    } else {
      sp.bs = std::min(sp.bs, r.start);
      sp.be = std::max(sp.be, r.end);
      ++sp.backwards;
    }
  }
  for (size_t si = 0; si < layout.steps.size(); ++si) {
    StepLayout& st = layout.steps[si];
    if (units.empty()) {
      st.problem = "no units";
      continue;
    }
    st.problem = checkChain(spans[si], units, st.units);
    st.complete = st.problem.empty();
    if (st.complete) {
      ++layout.complete;
      if (pseudo) {  // the pseudo-step spans the units' work, not the set-up around it
        st.start = std::min(st.start, st.units.front().fwd_start);
        st.end = std::max(st.end, st.units.front().bwd_end);
      }
    }
  }
  std::vector<size_t> complete;
  for (size_t si = 0; si < layout.steps.size(); ++si)
    if (layout.steps[si].complete) complete.push_back(si);
  if (complete.size() >= 2) complete.erase(complete.begin());
  layout.steady = complete;
  return layout;
}

}  // namespace gcprof::advisor

#include "report/chrome_trace.h"

#include <algorithm>
#include <climits>
#include <map>
#include <utility>

#include "memory/live_sweep.h"
#include "memory/memory_curve.h"
#include "memory/streamed_curve.h"
#include "saturating.h"

namespace gcprof::advisor {
namespace {

constexpr int kHostPid = 1;
constexpr int kDevicePid = 2;
constexpr int kLanes = 8;

const char* phaseName(const Range& r) {
  if (r.phase == Phase::Forward) return "forward";
  if (r.phase == Phase::Backward) return "backward";
  return r.domain == RangeDomain::Nvtx ? "nvtx" : "user";
}

// Slices on one track must nest; ranges "need not nest" (backward hooks of
// one thread can overlap), so each thread's ranges are spread over lanes in
// which they do.
class LaneAssigner {
 public:
  int assign(int64_t thread, Ns start, Ns end) {
    std::vector<std::vector<Ns>>& lanes = threads_[thread];
    for (size_t l = 0; l < lanes.size(); ++l) {
      std::vector<Ns>& open = lanes[l];  // end times of the open slices, innermost last
      while (!open.empty() && open.back() <= start) open.pop_back();
      if (open.empty() || end <= open.back()) {
        open.push_back(end);
        return static_cast<int>(l);
      }
    }
    if (lanes.size() < kLanes) {
      lanes.push_back({end});
      return static_cast<int>(lanes.size() - 1);
    }
    return kLanes - 1;  // pathological overlap: share the last lane
  }
  const std::map<int64_t, std::vector<std::vector<Ns>>>& threads() const { return threads_; }

 private:
  std::map<int64_t, std::vector<std::vector<Ns>>> threads_;
};

std::string sliceName(const Range& r) {
  std::string name = r.name.empty() ? "(model)" : r.name;
  if (r.phase == Phase::Backward) name += " (backward)";
  return name;
}

const Step* stepOf(const Trace& t, const Scalar& sc) {
  auto step = std::find_if(t.steps.begin(), t.steps.end(), [&](const Step& s) { return s.index == sc.step; });
  return step == t.steps.end() ? nullptr : &*step;
}

// The text of the run's names as dump() checks it, in the document's order:
// a name that is not UTF-8 (a C API or CUPTI name; the recorder mends only
// range names) throws the error the whole document's dump() gave, before
// anything is written, so that stdout gets nothing rather than half a
// document.
void requireDumpableNames(const Trace& t) {
  for (const Range& r : t.ranges) nlohmann::json(sliceName(r)).dump();
  for (const Scalar& sc : t.scalars)
    if (stepOf(t, sc)) nlohmann::json(sc.name).dump();
  for (const Kernel& k : t.kernels) nlohmann::json(k.name).dump();
}

// Each event as it is made, written as the array's next element.
class EventWriter {
 public:
  explicit EventWriter(const std::function<void(std::string_view)>& write) : write_(write) {}
  void add(const nlohmann::json& event) {
    if (count_++) write_(",");
    write_(event.dump());
  }
  size_t count() const { return count_; }

 private:
  const std::function<void(std::string_view)>& write_;
  size_t count_ = 0;
};

// Timestamps in µs from the run's first event.
struct Micros {
  Ns origin = 0;
  double operator()(Ns ns) const { return static_cast<double>(sat::sub(ns, origin)) / 1000.0; }
};

// The first event: the first allocation (the survey's), range or step.
Micros originOf(const Trace& t, const CurveSurvey& survey) {
  Ns origin = LLONG_MAX;
  if (survey.any_rows) origin = survey.first_alloc;
  if (!t.ranges.empty()) origin = std::min(origin, t.ranges.front().start);
  for (const Step& s : t.steps) origin = std::min(origin, s.start);
  return Micros{origin == LLONG_MAX ? 0 : origin};
}

// The ranges as slices, then the names of the threads' lanes.
void addRanges(EventWriter& events, const Trace& t, const Micros& us) {
  LaneAssigner lanes;
  for (const Range& r : t.ranges) {
    Ns end = std::max(r.end, r.start);
    int lane = lanes.assign(r.thread, r.start, end);
    nlohmann::json args = {{"depth", r.depth}, {"step", r.step}};
    if (r.device_ns >= 0) args["device_ns"] = r.device_ns;
    if (r.input_bytes || r.output_bytes) {
      args["input_bytes"] = r.input_bytes;
      args["output_bytes"] = r.output_bytes;
    }
    events.add({{"ph", "X"}, {"name", sliceName(r)}, {"cat", phaseName(r)}, {"pid", kHostPid},
                {"tid", sat::add(sat::mul(r.thread, kLanes), lane)}, {"ts", us(r.start)},
                {"dur", static_cast<double>(sat::sub(end, r.start)) / 1000.0}, {"args", args}});
  }
  for (const auto& [thread, ls] : lanes.threads()) {
    for (size_t l = 0; l < ls.size(); ++l) {
      std::string name = "thread " + std::to_string(thread) + (l ? " (overlapping " + std::to_string(l) + ")" : "");
      events.add({{"ph", "M"}, {"name", "thread_name"}, {"pid", kHostPid},
                  {"tid", sat::add(sat::mul(thread, kLanes), static_cast<int64_t>(l))}, {"args", {{"name", name}}}});
    }
  }
}

// Steps as instants, scalars as counters at their step's end.
void addSteps(EventWriter& events, const Trace& t, const Micros& us) {
  for (const Step& s : t.steps) {
    events.add({{"ph", "i"}, {"s", "p"}, {"name", "step " + std::to_string(s.index)},
                {"cat", "step"}, {"pid", kHostPid}, {"tid", 0}, {"ts", us(s.start)}});
  }
  for (const Scalar& sc : t.scalars) {
    const Step* step = stepOf(t, sc);
    if (!step) continue;
    events.add({{"ph", "C"}, {"name", sc.name}, {"pid", kHostPid}, {"ts", us(step->end)},
                {"args", {{sc.name, sc.value}}}});
  }
}

void addKernels(EventWriter& events, const Trace& t, const AllocationFilter& filter, const Micros& us) {
  if (!t.kernels.empty() || filter.device) {
    events.add({{"ph", "M"}, {"name", "process_name"}, {"pid", kDevicePid},
                {"args", {{"name", "gcprof run " + std::to_string(t.run.id) + " (device)"}}}});
  }
  for (const Kernel& k : t.kernels) {
    events.add({{"ph", "X"}, {"name", k.name}, {"cat", "kernel"}, {"pid", kDevicePid},
                {"tid", sat::add(sat::mul(k.device, 1000), k.stream)}, {"ts", us(k.start)},
                {"dur", static_cast<double>(std::max<Ns>(0, sat::sub(k.end, k.start))) / 1000.0},
                {"args", {{"correlation", k.correlation}, {"range", k.range}}}});
  }
}

}  // namespace

size_t writeChromeTrace(const Trace& t, const AllocationPass& allocations,
                        const std::function<void(std::string_view)>& write, size_t max_counter_points) {
  requireDumpableNames(t);
  // The first pass: the document's header names the peak, and the first
  // allocation may be the origin of every timestamp.
  const CurveSurvey survey = surveyCurve(allocations);
  const AllocationFilter& filter = survey.filter;
  const Micros us = originOf(t, survey);
  // The document's keys in nlohmann::json's order (sorted), the events last.
  const nlohmann::json other = {{"generator", "gcprof export"}, {"run", t.run.id},
                                {"memory", filter.describe()}, {"peak_bytes", survey.peak}};
  write(R"({"displayTimeUnit":"ms","otherData":)");
  write(other.dump());
  write(R"(,"traceEvents":[)");
  EventWriter events(write);
  events.add({{"ph", "M"}, {"name", "process_name"}, {"pid", kHostPid},
              {"args", {{"name", "gcprof run " + std::to_string(t.run.id) + " (host)"}}}});
  addRanges(events, t, us);
  addSteps(events, t, us);
  // The second pass: only the points written are made (the curve of every
  // instant was two points per allocation, 330 MB of a 10M-allocation run).
  const int mem_pid = filter.device ? kDevicePid : kHostPid;
  const std::string counter = "live bytes (" + filter.describe() + ")";
  downsampledPoints(allocations, survey, max_counter_points, [&](const MemoryPoint& p) {
    events.add({{"ph", "C"}, {"name", counter}, {"pid", mem_pid}, {"ts", us(p.time)},
                {"args", {{"bytes", p.live}}}});
  });
  addKernels(events, t, filter, us);
  write("]}");
  return events.count();
}

nlohmann::json chromeTrace(const Trace& t, size_t max_counter_points) {
  // In time order, as a loaded run's are (a Trace built by hand may not be).
  std::vector<Allocation> sorted;
  if (!inTimeOrder(t.allocations)) {
    sorted = t.allocations;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
  }
  const std::vector<Allocation>& rows = inTimeOrder(t.allocations) ? t.allocations : sorted;
  std::string text;
  writeChromeTrace(
      t, [&](const AllocationPiece& take) { take(rows); }, [&](std::string_view s) { text += s; },
      max_counter_points);
  return nlohmann::json::parse(text);
}

}  // namespace gcprof::advisor

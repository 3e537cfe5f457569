#include "start_choice.h"

#include <algorithm>

#include "trace_document.h"
#include "trace_store.h"

namespace gcprof::view {
namespace {

// The run's step indexes, ascending, without loading the run (a big run
// takes seconds; this is asked before the window opens).
std::vector<int64_t> stepIndexes(TraceStore& store, int64_t run) {
  sqlite3_stmt* st = nullptr;
  std::vector<int64_t> out;
  if (sqlite3_prepare_v2(store.handle(), "SELECT step FROM steps WHERE run = ? ORDER BY step", -1, &st,
                         nullptr) != SQLITE_OK)
    throw StoreError(store.path() + ": cannot read its steps: " + sqlite3_errmsg(store.handle()));
  sqlite3_bind_int64(st, 1, run);
  while (sqlite3_step(st) == SQLITE_ROW) out.push_back(sqlite3_column_int64(st, 0));
  sqlite3_finalize(st);
  return out;
}

}  // namespace

std::string checkStartNumbers(const StartChoice& c) {
  if (c.run < 0) return "--run " + std::to_string(c.run) + ": run ids are 1 or more (0: the newest)";
  if (c.plan && *c.plan < 0)
    return "--plan " + std::to_string(*c.plan) + ": plan ids are 1 or more (0: show no plan)";
  if (c.step && *c.step < 0)
    return "--step " + std::to_string(*c.step) + ": step indexes are 0 or more";
  if (c.frames < 1 || c.frames > 1000)
    return "--frames " + std::to_string(c.frames) + ": give 1 to 1000 frames";
  return "";
}

std::string checkStartChoice(const std::string& path, const StartChoice& c) {
  if (std::string bad = checkStartNumbers(c); !bad.empty()) return bad;
  if (c.run == 0 && !c.plan && !c.step) return "";
  try {
    TraceStore store(path, TraceStore::Mode::ReadOnly);
    std::vector<RunInfo> runs = store.runs();
    if (runs.empty()) return "";  // opening says the file holds no runs
    std::vector<int64_t> run_ids;
    for (const RunInfo& r : runs) run_ids.push_back(r.id);
    if (c.run != 0 && std::find(run_ids.begin(), run_ids.end(), c.run) == run_ids.end())
      return "--run " + std::to_string(c.run) + ": " + path + " has no run " + std::to_string(c.run) +
             "; it has runs " + idRanges(run_ids);
    int64_t id = TraceDocument::pickRun(store, runs, c.run);
    const RunInfo& run = *std::find_if(runs.begin(), runs.end(), [&](const RunInfo& r) { return r.id == id; });
    const std::string of_run = " for run " + std::to_string(id);
    if (c.plan && *c.plan > 0) {
      std::vector<int64_t> plans;
      for (const PlanRecord& p : store.plans())
        if (TraceDocument::planOfRun(p, run)) plans.push_back(p.id);
      if (std::find(plans.begin(), plans.end(), *c.plan) == plans.end())
        return "--plan " + std::to_string(*c.plan) + ": " + path + " has no plan " + std::to_string(*c.plan) +
               of_run + (plans.empty() ? "; it has no plans for it (gcprof advise stores them)"
                                       : "; it has plans " + idRanges(plans));
    }
    if (c.step) {
      std::vector<int64_t> steps = stepIndexes(store, id);
      if (!std::binary_search(steps.begin(), steps.end(), *c.step))
        return "--step " + std::to_string(*c.step) + ": run " + std::to_string(id) + " of " + path +
               " has no step " + std::to_string(*c.step) +
               (steps.empty() ? "; it recorded no steps" : "; it has steps " + idRanges(steps));
    }
  } catch (const std::exception&) {
    return "";  // not a readable trace: opening it says why
  }
  return "";
}

std::string idRanges(std::vector<int64_t> ids) {
  if (ids.empty()) return "none";
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  int groups = 0;
  for (size_t i = 0; i < ids.size();) {
    if (++groups > 12) return out + ", ... (" + std::to_string(ids.size()) + " in all)";
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ids[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace gcprof::view

#include "scale/run_size.h"

#include <cctype>
#include <set>

#include "advice_error.h"

namespace gcprof::advisor {
namespace {

std::optional<int64_t> positiveInteger(const std::string& s) {
  if (s.empty() || s.size() > 15) return std::nullopt;
  for (char ch : s)
    if (!std::isdigit(static_cast<unsigned char>(ch))) return std::nullopt;
  int64_t v = std::stoll(s);
  if (v <= 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<RunSize> sizeFromName(const RunInfo& run) {
  size_t eq = run.name.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  auto v = positiveInteger(run.name.substr(eq + 1));
  if (!v) return std::nullopt;
  return RunSize{run.id, run.name.substr(0, eq), *v};
}

std::vector<RunSize> sizedRuns(const std::vector<RunInfo>& runs, const std::string& name,
                               const std::string& trace) {
  std::vector<RunSize> out;
  std::set<std::string> names;
  for (const RunInfo& r : runs) {
    if (r.baseline_run != 0) continue;  // verifications re-run a plan; not a size of their own
    auto s = sizeFromName(r);
    if (!s) continue;
    names.insert(s->name);
    if (name.empty() || s->name == name) out.push_back(*s);
  }
  if (name.empty() && names.size() > 1) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw AdviceError(trace + ": runs are named by several sizes (" + list +
                      "); say which with --what-if NAME");
  }
  if (out.size() < 2) {
    std::string what = name.empty() ? "NAME=N" : name + "=N";
    throw AdviceError(trace + ": what-if needs two or more runs named " + what + " (found " +
                      std::to_string(out.size()) + "); record the job at two sizes with "
                      "`gcprof record -o " + trace + " --name " +
                      (name.empty() ? std::string("batch") : name) + "=2 -- ...`, or give the "
                      "runs' sizes with --size-of RUN=SIZE");
  }
  return out;
}

RunSize parseSizeOf(const std::string& text, const std::string& name) {
  size_t eq = text.find('=');
  auto run = eq == std::string::npos ? std::nullopt : positiveInteger(text.substr(0, eq));
  auto size = eq == std::string::npos ? std::nullopt : positiveInteger(text.substr(eq + 1));
  if (!run || !size)
    throw AdviceError("--size-of " + text + ": expected RUN=SIZE with positive integers (3=16)");
  return RunSize{*run, name, *size};
}

}  // namespace gcprof::advisor

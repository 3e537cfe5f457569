#include "verify/size_argument.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "advice_error.h"

namespace gcprof::advisor {
namespace {

std::vector<std::string> render(const std::string& size_arg, int64_t size) {
  std::vector<std::string> out;
  std::istringstream in(size_arg);
  std::string word;
  while (in >> word) {
    size_t at = word.find("{size}");
    if (at != std::string::npos) word.replace(at, 6, std::to_string(size));
    out.push_back(word);
  }
  return out;
}

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

}  // namespace

std::vector<std::string> withSize(const std::vector<std::string>& argv, const std::string& size_arg,
                                  int64_t from, int64_t to) {
  if (size_arg.find("{size}") == std::string::npos)
    throw AdviceError("--size-arg '" + size_arg + "' has no {size}; write it as \"--batch {size}\"");
  std::vector<std::string> old_words = render(size_arg, from), new_words = render(size_arg, to);
  auto at = std::search(argv.begin(), argv.end(), old_words.begin(), old_words.end());
  if (at == argv.end())
    throw AdviceError("the recorded command has no '" + joined(old_words) + "' (the recorded size " +
                      std::to_string(from) + " as --size-arg passes it): " + joined(argv) +
                      "; fix --size-arg or give the command after --");
  std::vector<std::string> out(argv.begin(), at);
  out.insert(out.end(), new_words.begin(), new_words.end());
  out.insert(out.end(), at + static_cast<std::ptrdiff_t>(old_words.size()), argv.end());
  return out;
}

void compareLossesAtSize(Verification& v, const Trace& measured, int64_t size, size_t baseline_steps) {
  size_t count = 0, bad = 0;
  for (const Scalar& s : measured.scalars) {
    if (s.name != "loss") continue;
    ++count;
    if (!std::isfinite(s.value)) ++bad;
  }
  Gate g{"losses finite", count > 0 && bad == 0 && count == baseline_steps, ""};
  g.detail = std::to_string(count) + " loss values at size " + std::to_string(size) + ", " +
             std::to_string(bad) + " not finite (baseline: " + std::to_string(baseline_steps) +
             "); not compared with the baseline, which ran another size";
  v.losses.clear();
  // Gradients and buffers of another batch differ by construction: those
  // gates compare like with like only at the recorded size.
  v.gates.erase(std::remove_if(v.gates.begin(), v.gates.end(),
                               [](const Gate& x) {
                                 return x.name == "gradients match" || x.name == "buffers match";
                               }),
                v.gates.end());
  for (Gate& old : v.gates)
    if (old.name == "losses match" || old.name == g.name) old = g;
  bool pass = std::all_of(v.gates.begin(), v.gates.end(), [](const Gate& x) { return x.passed; });
  v.verdict = pass ? "PASS" : "FAIL";
}

void compareStepsAtSize(Verification& v, const PlanFile& plan, const std::string& size_name, int64_t size,
                        int64_t recorded_size) {
  v.other_size = size_name + "=" + std::to_string(size) + " (baseline " + size_name + "=" +
                 std::to_string(recorded_size) + ")";
  v.predicted_baseline_step_ns = plan.baseline_step_ns;
  for (Gate& g : v.gates)
    if (g.name == "step time prediction") g = stepTimeGate(v);
}

}  // namespace gcprof::advisor

#include "chain/selective_options.h"

#include <algorithm>
#include <set>

namespace gcprof::advisor {
namespace {

std::string opName(const std::string& key) { return key.substr(0, key.rfind('#')); }

SelectiveOption optionOf(const std::string& label, const std::vector<const UnitOp*>& calls,
                         const std::vector<UnitOp>& order) {
  SelectiveOption o;
  o.label = label;
  std::set<const UnitOp*> chosen(calls.begin(), calls.end());
  for (const UnitOp& op : order) {  // forward order, for people and for stable plans
    if (!chosen.count(&op)) continue;
    o.save.push_back(op.key);
    o.kept += op.kept;
    o.lingering += op.lingering;
    o.saved_ns += op.ns;
  }
  return o;
}

// "aten.bernoulli_.float#0" -> "bernoulli_"
std::string baseName(const std::string& key) {
  std::string name = opName(key);
  if (name.compare(0, 5, "aten.") == 0) name = name.substr(5);
  return name.substr(0, name.find('.'));
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// In-place operators and the factories whose outputs are then filled in
// place (dropout's empty_like + bernoulli_): a cached output mutated later
// fails PyTorch's version check. Random operators must run again in the
// recomputation, or the ones after them would draw other numbers.
bool mutatedOrRandom(const std::string& key) {
  std::string name = baseName(key);
  if (name.empty() || name.back() == '_') return true;
  for (const char* p : {"empty", "zeros", "ones", "full", "rand", "bernoulli", "dropout", "normal",
                        "uniform", "multinomial", "poisson", "exponential", "geometric", "cauchy",
                        "log_normal"})
    if (contains(name, p)) return true;
  return false;
}

}  // namespace

bool isSaveable(const UnitOp& op, Bytes dropped) {
  if (op.kept <= 0 || op.lingering > 0 || op.ns <= 0 || op.kept >= dropped) return false;
  return !mutatedOrRandom(op.key);
}

bool isTorchtitanSaved(const std::string& key) {
  // torchtitan's SAC list (torch._functorch's compute-intensive operators
  // plus its own additions), by base name.
  static const std::set<std::string> names = {
      "mm", "addmm", "bmm", "linear", "convolution", "_scaled_mm",
      "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
      "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math",
      "_scaled_dot_product_fused_attention_overrideable", "_flash_attention_forward",
      "_efficient_attention_forward", "_scaled_dot_product_flash_attention_for_cpu", "max", "topk"};
  if (opName(key).compare(0, 5, "aten.") != 0) return false;
  return names.count(baseName(key)) > 0;
}

bool isCountedMatmul(const std::string& key) {
  std::string name = baseName(key);
  return opName(key).compare(0, 5, "aten.") == 0 && (name == "mm" || name == "linear");
}

void addOption(std::vector<SelectiveOption>& options, SelectiveOption o, Bytes dropped) {
  if (o.save.empty() || o.kept >= dropped) return;
  for (const SelectiveOption& have : options)
    if (have.save == o.save) return;
  options.push_back(std::move(o));
}

SelectiveOption optionOfCalls(const std::string& label, const std::vector<UnitOp>& ops,
                              const std::vector<std::string>& keys) {
  std::set<std::string> wanted(keys.begin(), keys.end());
  std::vector<const UnitOp*> calls;
  for (const UnitOp& op : ops)
    if (wanted.count(op.key)) calls.push_back(&op);
  return optionOf(label, calls, ops);
}

std::vector<SelectiveOption> selectiveOptions(const std::vector<UnitOp>& ops, Bytes dropped) {
  std::vector<const UnitOp*> saveable;
  for (const UnitOp& op : ops)
    if (isSaveable(op, dropped)) saveable.push_back(&op);
  std::vector<SelectiveOption> out;
  auto add = [&](SelectiveOption o) { addOption(out, std::move(o), dropped); };
  // torchtitan's rule: its list, outputs kept by autograd or not, but every
  // second mm/linear recomputed.
  std::vector<const UnitOp*> matmuls;
  int counted = 0;
  for (const UnitOp& op : ops) {
    if (!isTorchtitanSaved(op.key)) continue;
    if (isCountedMatmul(op.key) && ++counted % 2 == 0) continue;
    if ((op.kept <= 0 && op.lingering <= 0) || mutatedOrRandom(op.key)) continue;
    matmuls.push_back(&op);
  }
  add(optionOf("matmuls", matmuls, ops));
  // Fewest kept bytes per ns saved first (ties: the longer call first).
  std::stable_sort(saveable.begin(), saveable.end(), [](const UnitOp* a, const UnitOp* b) {
    double ra = static_cast<double>(a->kept) * static_cast<double>(b->ns);
    double rb = static_cast<double>(b->kept) * static_cast<double>(a->ns);
    return ra != rb ? ra < rb : a->ns > b->ns;
  });
  size_t m = saveable.size();
  std::set<size_t> lengths;
  if (m <= kMaxPrefixes) {
    for (size_t len = 1; len <= m; ++len) lengths.insert(len);
  } else {
    for (size_t i = 1; i <= kMaxPrefixes; ++i) lengths.insert(std::max<size_t>(1, m * i / kMaxPrefixes));
  }
  for (size_t len : lengths) {
    if (len == 0) continue;
    std::vector<const UnitOp*> prefix(saveable.begin(), saveable.begin() + static_cast<long>(len));
    add(optionOf("save " + std::to_string(len) + " ops", prefix, ops));
  }
  return out;
}

}  // namespace gcprof::advisor

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
    o.lingering_priced = o.lingering_priced && !op.lingering_unpriced;
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

bool isRandom(const std::string& name) {
  for (const char* p : {"rand", "bernoulli", "dropout", "normal", "uniform", "multinomial", "poisson",
                        "exponential", "geometric", "cauchy", "log_normal"})
    if (contains(name, p)) return true;
  return false;
}

// In-place operators and the factories whose outputs are then filled in
// place (dropout's empty_like + bernoulli_): a cached output mutated later
// fails PyTorch's version check. Random operators are saved only as
// dropouts (randomGroups).
bool mutatedOrRandom(const std::string& key) {
  std::string name = baseName(key);
  if (name.empty() || name.back() == '_' || isRandom(name)) return true;
  for (const char* p : {"empty", "zeros", "ones", "full"})
    if (contains(name, p)) return true;
  return false;
}

// A call whose output autograd does not keep, which the chain model prices
// exactly when saved (op_table.h): held from its recorded free in the unit's
// forward until the replay re-makes it.
bool lingersPriced(const UnitOp& op) {
  return op.lingering > 0 && !op.lingering_unpriced && op.ns > 0 && !op.mutated_later && !mutatedOrRandom(op.key);
}

// Calls saved together, or not at all.
struct SaveGroup {
  std::vector<const UnitOp*> calls;
  Bytes kept = 0;
  Bytes lingering = 0;
  Ns ns = 0;
  bool random = false;
};

// How many calls from ops[i] make a dropout's mask on a CPU (ATen's
// _dropout_impl: empty_like or empty, bernoulli_, div_; the mask then
// multiplies the input, out of place): 0 when ops[i] starts none.
size_t cpuDropoutAt(const std::vector<UnitOp>& ops, size_t i) {
  std::string factory = baseName(ops[i].key);
  if ((factory != "empty_like" && factory != "empty") || i + 1 >= ops.size() ||
      baseName(ops[i + 1].key) != "bernoulli_")
    return 0;
  return i + 2 < ops.size() && baseName(ops[i + 2].key) == "div_" ? 3 : 2;
}

// The unit's saveable calls as groups in forward order; `random_ok` is
// false when a random call of the unit cannot be saved (so that no random
// call before it may be). A save-list that saves a random call must save
// every later one too: checkpoint's replay starts from the RNG state the
// forward started with, and a random call taken from the cache draws
// nothing, so the random calls after it would draw other numbers
// (closeOverRandom). Dropout's mask on a CPU is filled in place after it
// is made; saving the three calls keeps the filled mask, and the replay
// runs none of them (checkpointing.py allows those cache entries to have
// been mutated). That is safe only where no other call mutates a tensor:
// a unit with other in-place calls saves no CPU dropout.
std::vector<SaveGroup> saveGroups(const std::vector<UnitOp>& ops, Bytes dropped) {
  bool foreign_in_place = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    size_t n = cpuDropoutAt(ops, i);
    if (n > 0) {
      i += n - 1;
      continue;
    }
    foreign_in_place = foreign_in_place || isInPlaceCall(ops[i].key);
  }
  std::vector<SaveGroup> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    SaveGroup g;
    size_t n = cpuDropoutAt(ops, i);
    if (n > 0 && !foreign_in_place) {
      g.random = true;
    } else if (baseName(ops[i].key) == "native_dropout") {
      n = 1;
      g.random = true;
    } else if (isSaveable(ops[i], dropped) || lingersPriced(ops[i])) {
      n = 1;
    } else {
      continue;
    }
    bool priced = true;
    for (size_t j = i; j < i + n; ++j) {
      g.calls.push_back(&ops[j]);
      g.kept += ops[j].kept;
      g.lingering += ops[j].lingering;
      priced = priced && !ops[j].lingering_unpriced;
      g.ns += ops[j].ns;
    }
    i += n - 1;
    if (priced && g.kept + g.lingering > 0 && g.ns > 0 &&
        g.kept + g.lingering < dropped)
      out.push_back(std::move(g));
  }
  return out;
}

// `chosen` with every random call after its first saved random call added
// (SaveGroup); false when one of them cannot be saved.
bool closeOverRandom(std::vector<const UnitOp*>& chosen, const std::vector<UnitOp>& ops,
                     const std::vector<SaveGroup>& groups) {
  std::set<const UnitOp*> in(chosen.begin(), chosen.end());
  const UnitOp* first = nullptr;
  for (const SaveGroup& g : groups)
    if (g.random && in.count(g.calls.front())) {
      first = g.calls.front();
      break;
    }
  if (!first) return true;
  for (const SaveGroup& g : groups)
    if (g.random && g.calls.front() > first)
      for (const UnitOp* c : g.calls)
        if (in.insert(c).second) chosen.push_back(c);
  for (const UnitOp& op : ops)
    if (&op > first && isRandom(baseName(op.key)) && !in.count(&op)) return false;
  return true;
}

}  // namespace

bool isSaveable(const UnitOp& op, Bytes dropped) {
  if (op.kept <= 0 || op.lingering > 0 || op.ns <= 0 || op.kept >= dropped || op.mutated_later) return false;
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
  std::vector<SaveGroup> groups = saveGroups(ops, dropped);
  std::vector<SelectiveOption> out;
  auto add = [&](SelectiveOption o) { addOption(out, std::move(o), dropped); };
  // torchtitan's rule: its list, outputs kept by autograd or not, but every
  // second mm/linear recomputed.
  std::vector<const UnitOp*> matmuls;
  int counted = 0;
  for (const UnitOp& op : ops) {
    if (!isTorchtitanSaved(op.key)) continue;
    if (isCountedMatmul(op.key) && ++counted % 2 == 0) continue;
    if ((op.kept <= 0 && op.lingering <= 0) || op.mutated_later || mutatedOrRandom(op.key)) continue;
    matmuls.push_back(&op);
  }
  add(optionOf("matmuls", matmuls, ops));
  // Fewest held bytes (kept or lingering) per ns saved first (ties: the
  // longer first).
  std::vector<const SaveGroup*> order;
  for (const SaveGroup& g : groups) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](const SaveGroup* a, const SaveGroup* b) {
    double ra = static_cast<double>(a->kept + a->lingering) * static_cast<double>(b->ns);
    double rb = static_cast<double>(b->kept + b->lingering) * static_cast<double>(a->ns);
    return ra != rb ? ra < rb : a->ns > b->ns;
  });
  size_t m = order.size();
  std::set<size_t> lengths;
  if (m <= kMaxPrefixes) {
    for (size_t len = 1; len <= m; ++len) lengths.insert(len);
  } else {
    for (size_t i = 1; i <= kMaxPrefixes; ++i) lengths.insert(std::max<size_t>(1, m * i / kMaxPrefixes));
  }
  for (size_t len : lengths) {
    std::vector<const UnitOp*> prefix;
    for (size_t i = 0; i < len; ++i) prefix.insert(prefix.end(), order[i]->calls.begin(), order[i]->calls.end());
    if (!closeOverRandom(prefix, ops, groups)) continue;
    SelectiveOption o = optionOf("save " + std::to_string(prefix.size()) + " ops", prefix, ops);
    if (o.kept + o.lingering < dropped) add(std::move(o));
  }
  return out;
}

}  // namespace gcprof::advisor

#include "simulate/allocator_settings.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace gcprof::advisor {
namespace {

constexpr Bytes kMiB = 1 << 20;

bool isPowerOfTwo(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

size_t log2Floor(size_t v) {
  size_t r = 0;
  while (v >>= 1) ++r;
  return r;
}

// c10 splits on , : [ ] and drops spaces (AllocatorConfig::lexArgs).
std::vector<std::string> lex(const std::string& conf) {
  std::vector<std::string> out;
  std::string word;
  for (char c : conf) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!word.empty()) out.push_back(word);
      word.clear();
      out.emplace_back(1, c);
    } else if (c != ' ') {
      word += c;
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

class Tokens {
 public:
  Tokens(std::vector<std::string> t, const std::string& conf) : t_(std::move(t)), conf_(conf) {}
  bool done() const { return i_ >= t_.size(); }
  const std::string& peek() const { return done() ? empty_ : t_[i_]; }
  std::string next(const char* what) {
    if (done()) fail(std::string("expected ") + what + " at the end");
    return t_[i_++];
  }
  void expect(const char* token) {
    std::string got = next(token);
    if (got != token) fail(std::string("expected '") + token + "', found '" + got + "'");
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("PYTORCH_CUDA_ALLOC_CONF=" + conf_ + ": " + why);
  }
  size_t number(const char* key) {
    std::string v = next(key);
    try {
      size_t used = 0;
      unsigned long long n = std::stoull(v, &used);
      if (used == v.size()) return static_cast<size_t>(n);
    } catch (const std::exception&) {
    }
    fail(std::string(key) + " wants a whole number, not '" + v + "'");
  }
  bool boolean(const char* key) {
    std::string v = next(key);
    if (v != "True" && v != "False") fail(std::string(key) + " wants True or False, not '" + v + "'");
    return v == "True";
  }

 private:
  std::vector<std::string> t_;
  std::string conf_;
  std::string empty_;
  size_t i_ = 0;
};

// Both accept at least kLargeBuffer (20 MiB), as c10 enforces.
Bytes megabytesAtLeast20(Tokens& t, const char* key) {
  size_t mb = t.number(key);
  if (mb < 20) t.fail(std::string(key) + " must be at least 20 (MiB), not " + std::to_string(mb));
  if (mb > static_cast<size_t>(std::numeric_limits<Bytes>::max() / kMiB)) return std::numeric_limits<Bytes>::max();
  return static_cast<Bytes>(mb) * kMiB;
}

// One power of two for every size, or a list keyed by sizes in MiB whose
// first entry also covers every smaller interval and `>` every larger one
// (AllocatorConfig::parseRoundUpPower2Divisions).
void divisions(Tokens& t, AllocatorSettings& s) {
  auto& d = s.roundup_power2_divisions;
  if (t.peek() != "[") {
    size_t v = t.number("roundup_power2_divisions");
    if (!isPowerOfTwo(v)) t.fail("roundup_power2_divisions must be a power of two, not " + std::to_string(v));
    d.fill(v);
    return;
  }
  t.expect("[");
  bool first = true;
  size_t last = 0;
  while (t.peek() != "]") {
    std::string size = t.next("an interval");
    t.expect(":");
    size_t v = t.number("roundup_power2_divisions");
    if (v != 0 && !isPowerOfTwo(v)) t.fail("divisions must be 0 or a power of two, not " + std::to_string(v));
    if (size == ">") {
      for (size_t k = last; k < d.size(); ++k) d[k] = v;
    } else {
      size_t mb = 0;
      try {
        mb = std::stoul(size);
      } catch (const std::exception&) {
        t.fail("interval '" + size + "' is not a size in MiB");
      }
      if (!isPowerOfTwo(mb)) t.fail("interval " + size + " must be a power of two (MiB)");
      size_t k = std::min(log2Floor(mb), d.size() - 1);
      if (first) {
        for (size_t j = 0; j < k; ++j) d[j] = v;
        first = false;
      }
      d[k] = v;
      last = k;
    }
    if (t.peek() == ",") t.expect(",");
  }
  t.expect("]");
}

}  // namespace

size_t AllocatorSettings::divisionsFor(Bytes size) const {
  // Interval k holds sizes in [2^(20+k), 2^(21+k)); smaller sizes use the first.
  size_t log = size > 0 ? log2Floor(static_cast<size_t>(size)) : 0;
  size_t k = log > 20 ? log - 20 : 0;
  return roundup_power2_divisions[std::min(k, kDivisionIntervals - 1)];
}

AllocatorSettings AllocatorSettings::parse(const std::string& conf) {
  AllocatorSettings s;
  s.text = conf;
  Tokens t(lex(conf), conf);
  while (!t.done()) {
    std::string key = t.next("a key");
    t.expect(":");
    if (key == "backend") {
      std::string v = t.next("backend");
      if (v != "native" && v != "cudaMallocAsync") t.fail("backend is native or cudaMallocAsync, not '" + v + "'");
      s.native = v == "native";
    } else if (key == "expandable_segments") {
      s.expandable_segments = t.boolean("expandable_segments");
    } else if (key == "max_split_size_mb") {
      s.max_split_size = megabytesAtLeast20(t, "max_split_size_mb");
    } else if (key == "max_non_split_rounding_mb") {
      s.max_non_split_rounding = megabytesAtLeast20(t, "max_non_split_rounding_mb");
    } else if (key == "roundup_power2_divisions") {
      divisions(t, s);
    } else if (key == "garbage_collection_threshold") {
      std::string v = t.next("garbage_collection_threshold");
      try {
        s.garbage_collection_threshold = std::stod(v);
      } catch (const std::exception&) {
        t.fail("garbage_collection_threshold wants a number in (0, 1), not '" + v + "'");
      }
    } else {
      // Options that do not change device reservations (pinned memory,
      // release_lock_on_cudamalloc, ...): one value, or a bracketed list.
      if (t.peek() == "[") {
        while (!t.done() && t.peek() != "]") t.next("]");
        t.expect("]");
      } else {
        t.next(key.c_str());
      }
    }
    if (!t.done()) t.expect(",");
  }
  return s;
}

AllocatorSettings AllocatorSettings::fromRunEnvironment(const std::string& env_json) {
  nlohmann::json env = nlohmann::json::parse(env_json.empty() ? "{}" : env_json, nullptr, false);
  if (env.is_object()) {
    auto it = env.find("PYTORCH_CUDA_ALLOC_CONF");
    if (it != env.end() && it->is_string()) return parse(it->get<std::string>());
    // The device-generic name newer PyTorch releases also read (not checked
    // here which one wins when a job sets both).
    it = env.find("PYTORCH_ALLOC_CONF");
    if (it != env.end() && it->is_string()) return parse(it->get<std::string>());
  }
  return {};
}

}  // namespace gcprof::advisor

#include "allocation_batch.h"

#include <charconv>
#include <cstdint>
#include <cstring>

namespace gcprof {
namespace {

// id - first_id, addr, bytes, device, stream, thread, api, alloc_ns - base_ns,
// lifetime, range, step, kind
constexpr int kFields = 12;

constexpr char kPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// The eight digits of v < 10^8, leading zeros included: two independent
// halves, not one chain of divisions.
void eightDigits(char* p, uint32_t v) {
  uint32_t hi = v / 10000, lo = v % 10000;
  std::memcpy(p, kPairs + 2 * (hi / 100), 2);
  std::memcpy(p + 2, kPairs + 2 * (hi % 100), 2);
  std::memcpy(p + 4, kPairs + 2 * (lo / 100), 2);
  std::memcpy(p + 6, kPairs + 2 * (lo % 100), 2);
}

// to_chars, eight digits at a time past 10^8: a block's address has 15 and
// was the slowest number of a row (one division per two digits, each waiting
// for the last: a sixth of the storm's writer, bench/history/recording-overhead.md).
char* writeDecimal(char* p, char* end, int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  if (v < 0) {
    *p++ = '-';
    u = 0 - u;
  }
  if (u < 100000000) return std::to_chars(p, end, u).ptr;
  uint64_t high = u / 100000000;
  p = writeDecimal(p, end, static_cast<int64_t>(high));  // < 10^12: at most once more
  eightDigits(p, static_cast<uint32_t>(u - high * 100000000));
  return p + 8;
}

}  // namespace

void beginBatch(std::string& batch) {
  batch.clear();
  batch.push_back('[');
}

bool appendToBatch(std::string& batch, const BatchBase& base, const Allocation& a) {
  int64_t id, alloc, life = -1;
  if (__builtin_sub_overflow(a.id, base.first_id, &id) ||
      __builtin_sub_overflow(a.alloc, base.base_ns, &alloc))
    return false;
  if (a.free >= 0 && (__builtin_sub_overflow(a.free, a.alloc, &life) || life < 0)) return false;
  if (a.free < -1) return false;  // only -1 means live
  const int64_t v[kFields] = {id,       static_cast<int64_t>(a.addr), a.bytes, a.device,
                              a.stream, a.thread,  a.api,   alloc,
                              life,     a.range,   a.step,  a.kind};
  // One append per row: the storm's writer spent a sixth of its time in
  // per-number appends (bench/history/recording-overhead.md).
  char row[kFields * 21 + 4];  // 20 characters per int64, the separators, ",[" and "]"
  char* p = row;
  if (batch.size() > 1) *p++ = ',';
  *p++ = '[';
  for (int i = 0; i < kFields; ++i) {
    if (i) *p++ = ',';
    p = writeDecimal(p, row + sizeof row, v[i]);
  }
  *p++ = ']';
  batch.append(row, p);
  return true;
}

void closeBatch(std::string& batch) { batch.push_back(']'); }

bool parseBatch(std::string_view text, const BatchBase& base, std::vector<Allocation>& out,
                std::string& problem) {
  const char* p = text.data();
  const char* end = p + text.size();
  auto expect = [&](char c) {
    if (p < end && *p == c) {
      ++p;
      return true;
    }
    problem = std::string("expected '") + c + "' at byte " + std::to_string(p - text.data());
    return false;
  };
  if (!expect('[')) return false;
  if (p < end && *p == ']') {  // an empty batch (never written, but valid)
    ++p;
    if (p == end) return true;
    problem = "text after the batch at byte " + std::to_string(p - text.data());
    return false;
  }
  for (;;) {
    if (!expect('[')) return false;
    int64_t v[kFields];
    for (int i = 0; i < kFields; ++i) {
      if (i && !expect(',')) return false;
      auto [next, ec] = std::from_chars(p, end, v[i]);
      if (ec != std::errc()) {
        problem = "expected an integer at byte " + std::to_string(p - text.data());
        return false;
      }
      p = next;
    }
    if (!expect(']')) return false;
    Allocation a;
    if (__builtin_add_overflow(base.first_id, v[0], &a.id) ||
        __builtin_add_overflow(base.base_ns, v[7], &a.alloc) || v[8] < -1 ||
        (v[8] >= 0 && __builtin_add_overflow(a.alloc, v[8], &a.free))) {
      problem = "a row out of range before byte " + std::to_string(p - text.data());
      return false;
    }
    if (v[8] < 0) a.free = -1;
    if (!setNarrowFields(a, v[9], v[10], v[3], v[6], v[11])) {
      problem = "a range, step, device, api or kind out of range before byte " +
                std::to_string(p - text.data());
      return false;
    }
    a.addr = static_cast<uint64_t>(v[1]);
    a.bytes = v[2];
    a.stream = v[4];
    a.thread = v[5];
    out.push_back(a);
    if (p < end && *p == ',') {
      ++p;
      continue;
    }
    if (!expect(']')) return false;
    if (p != end) {
      problem = "text after the batch at byte " + std::to_string(p - text.data());
      return false;
    }
    return true;
  }
}

}  // namespace gcprof

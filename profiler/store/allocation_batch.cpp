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

namespace {

// Where parseBatch is in the text. The steps are small and inlined; what
// went wrong is only spelled out on the way out (a damaged batch is rare,
// and building the message in the loop kept it from being inlined).
struct Cursor {
  const char* begin;
  const char* p;
  const char* end;
  const char* fault = nullptr;  // set on malformed text
  const char* why = nullptr;     // what was wrong there
  char wanted = 0;               // or the character expected there
  bool before = false;           // a bad row: said as before where it ends

  bool take(char c) {
    if (p < end && *p == c) {
      ++p;
      return true;
    }
    wanted = c;
    return fail("expected a character");
  }
  bool fail(const char* what) {
    fault = p;
    why = what;
    return false;
  }
  // An integer as std::from_chars reads one: an optional '-', then digits.
  // Up to 18 digits cannot overflow and are summed here; longer ones go to
  // from_chars, which says when they do. `Bounded` false: the text ends in
  // ']' (checked once a batch), so every run of digits stops before its
  // end and the loop needs no other test per digit.
  template <bool Bounded>
  bool integer(int64_t& v) {
    const char* q = p + (p < end && *p == '-');
    uint64_t u = 0;  // wraps past 19 digits; then unused
    const char* digits = q;
    if (Bounded)
      while (q < end && static_cast<unsigned>(*q - '0') < 10 && q - digits < 19)
        u = u * 10 + static_cast<unsigned>(*q++ - '0');
    else
      while (static_cast<unsigned>(*q - '0') < 10) u = u * 10 + static_cast<unsigned>(*q++ - '0');
    if (q == digits) return fail("expected an integer");
    if (q - digits <= 18) {
      v = *p == '-' ? -static_cast<int64_t>(u) : static_cast<int64_t>(u);
      p = q;
      return true;
    }
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) return fail("expected an integer");
    p = next;
    return true;
  }
};

// One row's twelve numbers, "[...]" included.
template <bool Bounded>
bool parseRow(Cursor& c, int64_t (&v)[kFields]) {
  if (!c.take('[')) return false;
  for (int i = 0; i < kFields; ++i)
    if ((i && !c.take(',')) || !c.integer<Bounded>(v[i])) return false;
  return c.take(']');
}

// The row `v` relative to `base` as an Allocation; false when a field is
// out of range.
bool rowFrom(const int64_t (&v)[kFields], const BatchBase& base, Allocation& a, const char*& why) {
  if (__builtin_add_overflow(base.first_id, v[0], &a.id) || __builtin_add_overflow(base.base_ns, v[7], &a.alloc) ||
      v[8] < -1 || (v[8] >= 0 && __builtin_add_overflow(a.alloc, v[8], &a.free))) {
    why = "a row out of range";
    return false;
  }
  if (v[8] < 0) a.free = -1;
  if (!setNarrowFields(a, v[9], v[10], v[3], v[6], v[11])) {
    why = "a range, step, device, api or kind out of range";
    return false;
  }
  a.addr = static_cast<uint64_t>(v[1]);
  a.bytes = v[2];
  a.stream = v[4];
  a.thread = v[5];
  return true;
}

// The problem's text, as the loader's error shows it.
std::string problemAt(const Cursor& c) {
  const std::string what = c.wanted ? std::string("expected '") + c.wanted + "'" : std::string(c.why);
  return what + (c.before ? " before byte " : " at byte ") + std::to_string(c.fault - c.begin);
}

// parseBatch, each row given to `add`.
template <bool Bounded, typename Add>
bool parseRows(std::string_view text, const BatchBase& base, std::string& problem, Add add) {
  Cursor c{text.data(), text.data(), text.data() + text.size()};
  auto failed = [&]() {
    problem = problemAt(c);
    return false;
  };
  if (!c.take('[')) return failed();
  if (!(c.p < c.end && *c.p == ']')) {  // not an empty batch (never written, but valid)
    for (;;) {
      int64_t v[kFields];
      if (!parseRow<Bounded>(c, v)) return failed();
      Allocation a;
      if (!rowFrom(v, base, a, c.why)) {
        c.fault = c.p;
        c.before = true;
        return failed();
      }
      add(a);
      if (c.p < c.end && *c.p == ',') {
        ++c.p;
        continue;
      }
      break;
    }
  }
  if (!c.take(']')) return failed();
  if (c.p != c.end) {
    c.fail("text after the batch");
    return failed();
  }
  return true;
}

// parseRows, unbounded where the text ends in ']' (as a whole batch does):
// then neither a run of digits nor a '-' before one reaches the end.
template <typename Add>
bool parseAnyRows(std::string_view text, const BatchBase& base, std::string& problem, Add add) {
  if (!text.empty() && text.back() == ']')
    return parseRows<false>(text, base, problem, add);
  return parseRows<true>(text, base, problem, add);
}

}  // namespace

bool parseBatch(std::string_view text, const BatchBase& base, std::vector<Allocation>& out,
                std::string& problem) {
  return parseAnyRows(text, base, problem, [&](const Allocation& a) { out.push_back(a); });
}

bool parseBatch(std::string_view text, const BatchBase& base, AllocationBlocks& out, std::string& problem) {
  return parseAnyRows(text, base, problem, [&](const Allocation& a) { out.append(a); });
}

}  // namespace gcprof

// The text of a batch (allocation_batch.h, range_batch.h): JSON arrays of
// integers written and read without a JSON library, the hot part of both.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>

namespace gcprof::batch_text {

inline constexpr char kPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// The eight digits of v < 10^8, leading zeros included: two independent
// halves, not one chain of divisions.
inline void eightDigits(char* p, uint32_t v) {
  uint32_t hi = v / 10000, lo = v % 10000;
  std::memcpy(p, kPairs + 2 * (hi / 100), 2);
  std::memcpy(p + 2, kPairs + 2 * (hi % 100), 2);
  std::memcpy(p + 4, kPairs + 2 * (lo / 100), 2);
  std::memcpy(p + 6, kPairs + 2 * (lo % 100), 2);
}

// to_chars, eight digits at a time past 10^8: a block's address has 15 and
// was the slowest number of a row (one division per two digits, each waiting
// for the last: a sixth of the storm's writer, bench/history/recording-overhead.md).
inline char* writeDecimal(char* p, char* end, int64_t v) {
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

// Where a batch's parser is in its text. The steps are small and inlined; what
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

// The problem's text, as the loader's error shows it.
inline std::string problemAt(const Cursor& c) {
  const std::string what = c.wanted ? std::string("expected '") + c.wanted + "'" : std::string(c.why);
  return what + (c.before ? " before byte " : " at byte ") + std::to_string(c.fault - c.begin);
}

}  // namespace gcprof::batch_text

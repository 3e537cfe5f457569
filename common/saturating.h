// Byte and nanosecond arithmetic that cannot overflow. A trace file is input:
// a damaged or hand-made one may hold sizes and times near the int64 limits,
// and signed overflow is undefined behaviour, not just a wrong number. Sums,
// differences and products of trace values go through these functions, which
// stop at INT64_MAX / INT64_MIN instead of wrapping; a clamped figure prints
// as an absurd size ("8 EiB") rather than as a negative one or a crash.
#pragma once

#include <cstdint>
#include <limits>

namespace gcprof::sat {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

constexpr int64_t add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMax : kMin;
  return r;
}

constexpr int64_t sub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kMax : kMin;
  return r;
}

constexpr int64_t mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? kMin : kMax;
  return r;
}

// -a, with -INT64_MIN clamped to INT64_MAX.
constexpr int64_t neg(int64_t a) { return a == kMin ? kMax : -a; }

// (a + b) / 2 rounded toward zero, as plain int64 arithmetic would give it,
// but without overflow (the sum is formed in 128 bits; the half always fits).
constexpr int64_t midpoint(int64_t a, int64_t b) {
  return static_cast<int64_t>((static_cast<__int128>(a) + b) / 2);
}

// A sum kept in 128 bits (exact over any number of int64 terms a trace can
// hold), clamped back to int64.
constexpr int64_t fromWide(__int128 v) { return v > kMax ? kMax : v < kMin ? kMin : static_cast<int64_t>(v); }

// a += b, clamped.
constexpr void addTo(int64_t& a, int64_t b) { a = add(a, b); }

// A double rounded to int64, clamped (NaN gives 0): converting an out-of-range
// double to an integer is undefined too.
inline int64_t fromDouble(double v) {
  if (!(v == v)) return 0;
  if (v >= 9.2233720368547758e18) return kMax;
  if (v <= -9.2233720368547758e18) return kMin;
  return static_cast<int64_t>(v);
}

}  // namespace gcprof::sat

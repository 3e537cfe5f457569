#include "allocation_order.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gcprof {
namespace {

int bitWidth(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// MSD radix sort in place (American flag sort) of 64-bit keys, a byte at a
// time from bit `bits` down (the bits above are zero): no second buffer of
// keys, which an LSD sort's passes need (82 MB more of a 10M-row load, at
// its peak). Comparison sorts met the recorder's free order as a bad case:
// libstdc++'s introsort fell back to heapsort on it; here only runs of at
// most 64 keys are compared.
void radixSort(uint64_t* first, uint64_t* last, int bits) {
  if (last - first <= 64 || bits <= 0) {
    std::sort(first, last);
    return;
  }
  const int shift = std::max(0, bits - 8);
  const uint64_t mask = (uint64_t{1} << (bits - shift)) - 1;
  auto digit = [&](uint64_t k) { return static_cast<size_t>((k >> shift) & mask); };
  size_t head[256] = {}, tail[256] = {};
  for (uint64_t* p = first; p != last; ++p) ++tail[digit(*p)];
  for (size_t b = 0, at = 0; b <= mask; ++b) {
    head[b] = at;
    at += tail[b];
    tail[b] = at;
  }
  // Each key goes to the next free place of its digit's bucket; the key it
  // displaces goes on in its place, until one of this bucket comes back.
  for (size_t b = 0; b <= mask; ++b) {
    while (head[b] < tail[b]) {
      uint64_t k = first[head[b]];
      for (size_t d = digit(k); d != b; d = digit(k)) std::swap(k, first[head[d]++]);
      first[head[b]++] = k;
    }
  }
  for (size_t b = 0, from = 0; b <= mask; from = tail[b], ++b) radixSort(first + from, first + tail[b], shift);
}

// The rows in (alloc, row) order, as row numbers.
std::vector<uint64_t> rowsByAllocation(const std::vector<Allocation>& a) {
  const size_t n = a.size();
  auto [lo, hi] = std::minmax_element(a.begin(), a.end(),
                                      [](const Allocation& x, const Allocation& y) { return x.alloc < y.alloc; });
  const uint64_t span = static_cast<uint64_t>(hi->alloc) - static_cast<uint64_t>(lo->alloc);
  const int row_bits = bitWidth(n - 1);
  std::vector<uint64_t> keys(n);
  if (row_bits + bitWidth(span) <= 64) {
    // One word a row: the time since the first allocation above the row
    // number, so that equal times keep the rows' order.
    const uint64_t base = static_cast<uint64_t>(lo->alloc);
    for (size_t i = 0; i < n; ++i) keys[i] = ((static_cast<uint64_t>(a[i].alloc) - base) << row_bits) | i;
    radixSort(keys.data(), keys.data() + n, row_bits + bitWidth(span));
    const uint64_t mask = row_bits == 64 ? ~uint64_t{0} : (uint64_t{1} << row_bits) - 1;
    for (uint64_t& k : keys) k &= mask;
    return keys;
  }
  // A run too long for one word (times spanning centuries of nanoseconds).
  for (size_t i = 0; i < n; ++i) keys[i] = i;
  std::sort(keys.begin(), keys.end(), [&](uint64_t x, uint64_t y) {
    return a[x].alloc != a[y].alloc ? a[x].alloc < a[y].alloc : x < y;
  });
  return keys;
}

}  // namespace

void sortByAllocation(std::vector<Allocation>& a) {
  if (a.size() < 2) return;
  std::vector<uint64_t> rows = rowsByAllocation(a);
  // Rows at one instant go by id (the row's place in the vector is not its id).
  for (size_t i = 0; i < rows.size();) {
    const Ns at = a[rows[i]].alloc;
    size_t j = i + 1;
    while (j < rows.size() && a[rows[j]].alloc == at) ++j;
    if (j - i > 1)
      std::sort(rows.begin() + static_cast<std::ptrdiff_t>(i), rows.begin() + static_cast<std::ptrdiff_t>(j),
                [&](uint64_t x, uint64_t y) { return a[x].id < a[y].id; });
    i = j;
  }
  // Position i takes row rows[i]: follow each cycle of the permutation
  // once, marking the positions filled (row = i).
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] == i) continue;
    Allocation first = std::move(a[i]);
    size_t at = i;
    while (rows[at] != i) {
      size_t from = rows[at];
      a[at] = std::move(a[from]);
      rows[at] = at;
      at = from;
    }
    a[at] = std::move(first);
    rows[at] = at;
  }
}

}  // namespace gcprof

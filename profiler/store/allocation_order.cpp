#include "allocation_order.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gcprof {
namespace {

int bitWidth(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }

// LSD radix sort of 64-bit keys, 11 bits a pass, over the low `bits` bits
// (the others are zero). Comparison sorts met the recorder's free order
// as a bad case: libstdc++'s introsort fell back to heapsort on it.
void radixSort(std::vector<uint64_t>& keys, int bits) {
  constexpr int kDigit = 11;
  constexpr size_t kBuckets = size_t{1} << kDigit;
  std::vector<uint64_t> other(keys.size());
  for (int shift = 0; shift < bits; shift += kDigit) {
    std::vector<size_t> count(kBuckets + 1, 0);
    for (uint64_t k : keys) ++count[((k >> shift) & (kBuckets - 1)) + 1];
    if (count[1 + ((keys[0] >> shift) & (kBuckets - 1))] == keys.size()) continue;  // one digit: in order
    for (size_t b = 1; b <= kBuckets; ++b) count[b] += count[b - 1];
    for (uint64_t k : keys) other[count[(k >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(other);
  }
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
    radixSort(keys, row_bits + bitWidth(span));
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

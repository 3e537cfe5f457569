#include "allocation_order.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace gcprof {

void sortByAllocation(std::vector<Allocation>& a) {
  struct Key {
    Ns alloc;
    size_t row;
  };
  std::vector<Key> keys(a.size());
  for (size_t i = 0; i < a.size(); ++i) keys[i] = {a[i].alloc, i};
  std::sort(keys.begin(), keys.end(),
            [](const Key& x, const Key& y) { return x.alloc != y.alloc ? x.alloc < y.alloc : x.row < y.row; });
  // Rows at one instant go by id (the row's place in the vector is not its id).
  for (size_t i = 0; i < keys.size();) {
    size_t j = i + 1;
    while (j < keys.size() && keys[j].alloc == keys[i].alloc) ++j;
    if (j - i > 1)
      std::sort(keys.begin() + static_cast<std::ptrdiff_t>(i), keys.begin() + static_cast<std::ptrdiff_t>(j),
                [&](const Key& x, const Key& y) { return a[x.row].id < a[y.row].id; });
    i = j;
  }
  // Position i takes row keys[i].row: follow each cycle of the permutation
  // once, marking the positions filled (row = i).
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].row == i) continue;
    Allocation first = std::move(a[i]);
    size_t at = i;
    while (keys[at].row != i) {
      size_t from = keys[at].row;
      a[at] = std::move(a[from]);
      keys[at].row = at;
      at = from;
    }
    a[at] = std::move(first);
    keys[at].row = at;
  }
}

}  // namespace gcprof

#include "time_order.h"

#include <algorithm>
#include <cstddef>
#include <iterator>

namespace gcprof::inject {

void sortByTime(std::vector<Stamped>& events, std::vector<Stamped>& scratch) {
  // Where each ascending run starts; a clock that went back starts a new one.
  std::vector<size_t> starts{0};
  for (size_t i = 1; i < events.size(); ++i)
    if (events[i].e.time < events[i - 1].e.time) starts.push_back(i);
  if (starts.size() == 1) return;  // the usual quiet round: one thread, in order
  auto earlier = [](const Stamped& x, const Stamped& y) { return x.e.time < y.e.time; };
  starts.push_back(events.size());
  // Merge neighbouring runs pairwise until one is left; std::merge takes the
  // left run's element first on equal times, so the order of ties is kept.
  // The buffers swap after each pass: both get the same capacity, so the
  // caller's next round does not grow (copy) the one it is handed back.
  while (starts.size() > 2) {
    std::vector<size_t> merged;
    scratch.clear();
    scratch.reserve(events.capacity());
    size_t k = 0;
    for (; k + 2 < starts.size(); k += 2) {
      merged.push_back(starts[k]);
      std::merge(events.begin() + starts[k], events.begin() + starts[k + 1],
                 events.begin() + starts[k + 1], events.begin() + starts[k + 2],
                 std::back_inserter(scratch), earlier);
    }
    if (k + 1 < starts.size()) {  // an odd run out: copied as it is
      merged.push_back(starts[k]);
      scratch.insert(scratch.end(), events.begin() + starts[k], events.begin() + starts[k + 1]);
    }
    merged.push_back(events.size());
    events.swap(scratch);
    starts.swap(merged);
  }
}

}  // namespace gcprof::inject

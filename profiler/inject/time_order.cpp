#include "time_order.h"

#include <algorithm>
#include <cstddef>

namespace gcprof::inject {

void sortByTime(std::vector<Stamped>& events, std::vector<Stamped>& scratch) {
  // Where each ascending run starts; a clock that went back starts a new one.
  std::vector<size_t> starts{0};
  for (size_t i = 1; i < events.size(); ++i)
    if (events[i].e.time < events[i - 1].e.time) starts.push_back(i);
  if (starts.size() == 1) return;  // the usual quiet round: one thread, in order
  // One pass: a min-heap of the runs' next events, each event copied once.
  // (Merging the runs pairwise copied every event log2(runs) times: the
  // storm's 9 runs a round made it a tenth of the writer's time, bench/RESULTS.md.)
  // Ties go to the run that comes first, whose events came first: the order
  // of a stable sort.
  struct Head {  // a run's next event: its time (kept here, read at every step) and the run
    Ns time;
    size_t run;
  };
  auto after = [](const Head& x, const Head& y) {
    return x.time > y.time || (x.time == y.time && x.run > y.run);
  };
  starts.push_back(events.size());
  std::vector<size_t> at(starts.begin(), starts.end() - 1);  // each run's next event
  std::vector<Head> heap;
  for (size_t k = 0; k + 1 < starts.size(); ++k) heap.push_back({events[starts[k]].e.time, k});
  std::make_heap(heap.begin(), heap.end(), after);
  scratch.clear();
  // The same capacity as `events`: the caller's next round does not grow
  // (copy) the buffer it is handed back.
  scratch.reserve(events.capacity());
  while (!heap.empty()) {
    size_t k = heap.front().run;
    scratch.push_back(events[at[k]++]);
    if (at[k] == starts[k + 1]) {
      std::pop_heap(heap.begin(), heap.end(), after);
      heap.pop_back();
      continue;
    }
    // The root's run moved on: sift it down (its time only grew).
    heap.front().time = events[at[k]].e.time;
    for (size_t i = 0;;) {
      size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < heap.size() && after(heap[m], heap[l])) m = l;
      if (r < heap.size() && after(heap[m], heap[r])) m = r;
      if (m == i) break;
      std::swap(heap[i], heap[m]);
      i = m;
    }
  }
  events.swap(scratch);
}

}  // namespace gcprof::inject

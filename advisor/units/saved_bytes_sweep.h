// Saved bytes (module_stats.h) of every module in every step, from one pass
// over the allocations in allocation-time order: a loaded Trace's rows
// (advise) or a run handed over a piece at a time (allocation_stream.h:
// `gcprof show`, which never holds the rows). One implementation for both,
// so that show and advise cannot disagree on what a module saves.
//
// A module's forward range is "open" while the allocations passed are
// inside it; each allocation counts for every open forward range whose
// module's backward span in that step holds its free. Nested modules,
// several calls of a module in a step and ranges of other threads are open
// together; an allocation inside two calls of one module (a recursive
// call) counts twice, once per call, as a search per call always counted it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "memory/memory_curve.h"
#include "trace.h"
#include "units/module_ranges.h"

namespace gcprof::advisor {

class SavedBytesSweep {
 public:
  // `ranges` must outlive the sweep; `filter` picks the memory that counts.
  SavedBytesSweep(const ModuleRanges& ranges, const AllocationFilter& filter);

  // The next allocation by allocation time (any row: the filter picks).
  // Throws AdviceError when it is earlier than the last one added.
  void add(const Allocation& a);

  // Bytes allocated inside one of `sr.forward` (once per such range) and
  // freed inside the span of `sr.backward`, of the allocations added so far.
  // `sr` is one of the sweep's `ranges`; 0 when it has no backward range.
  Bytes savedIn(const StepRanges& sr) const;

 private:
  // A forward range with its module's backward span in its step.
  struct Window {
    Ns start = 0;
    Ns end = 0;
    Ns backward_start = 0;
    Ns backward_end = 0;
    uint32_t slot = 0;  // its module and step in saved_
  };
  void open(Ns t);

  AllocationFilter filter_;
  std::vector<Window> windows_;  // by start
  size_t next_ = 0;              // the first window not yet opened
  std::vector<Window> open_;     // the windows the last allocation's time is inside
  Ns open_until_ = INT64_MAX;    // the earliest end among open_
  Ns last_ = INT64_MIN;          // the last allocation's time
  std::vector<Bytes> saved_;     // per module and step
  std::unordered_map<const StepRanges*, uint32_t> slot_of_;
};

}  // namespace gcprof::advisor

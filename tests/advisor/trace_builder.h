// Hand-built traces for the advisor tests: a chain of modules with forward and
// backward ranges and allocations whose answers the tests work out by hand.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "trace.h"

namespace gcprof::testing {

// As TraceStore::load returns a trace: ranges by start, allocations by birth,
// steps by index. Tests that edit a built trace call it again.
inline void sortAsLoaded(Trace& t) {
  std::stable_sort(t.ranges.begin(), t.ranges.end(),
                   [](const Range& a, const Range& b) { return a.start < b.start; });
  std::stable_sort(t.allocations.begin(), t.allocations.end(),
                   [](const Allocation& a, const Allocation& b) { return a.alloc < b.alloc; });
  std::stable_sort(t.steps.begin(), t.steps.end(), [](const Step& a, const Step& b) { return a.index < b.index; });
}

// The trace's next allocation (free = -1: never freed): ids count from 1 and
// each has its own address, as the store numbers them.
inline void appendAllocation(Trace& t, Ns at, Ns free, Bytes bytes, int device = -1,
                             int64_t step = 0, AllocKind kind = AllocKind::Tensor) {
  Allocation a;
  a.id = static_cast<int64_t>(t.allocations.size()) + 1;
  a.addr = 0x1000 * static_cast<uint64_t>(a.id);
  a.bytes = bytes;
  a.device = device;
  a.alloc = at;
  a.free = free;
  a.step = step;
  a.kind = static_cast<int>(kind);
  t.allocations.push_back(a);
}

class TraceBuilder {
 public:
  TraceBuilder() { trace_.run.id = 1; trace_.run.runtime = "native"; }

  // A module range; returns its id.
  int64_t range(const std::string& name, Phase phase, Ns start, Ns end, int64_t step = 0,
                Ns device_ns = -1, Bytes in = 0, Bytes out = 0) {
    Range r;
    r.id = static_cast<int64_t>(trace_.ranges.size()) + 1;
    r.name = name;
    r.domain = RangeDomain::Module;
    r.phase = phase;
    r.depth = name.empty() ? 0 : 1 + static_cast<int>(std::count(name.begin(), name.end(), '.'));
    r.start = start;
    r.end = end;
    r.step = step;
    r.device_ns = device_ns;
    r.input_bytes = in;
    r.output_bytes = out;
    trace_.ranges.push_back(r);
    return r.id;
  }
  // An operator range of `record --ops` ("op aten.mm.default").
  void op(const std::string& overload, Ns start, Ns end, int64_t step = 0) {
    Range r;
    r.id = static_cast<int64_t>(trace_.ranges.size()) + 1;
    r.name = "op " + overload;
    r.domain = RangeDomain::User;
    r.phase = Phase::User;
    r.start = start;
    r.end = end;
    r.step = step;
    trace_.ranges.push_back(r);
  }
  void alloc(Ns at, Ns free, Bytes bytes, int device = -1, int64_t step = 0,
             AllocKind kind = AllocKind::Tensor) {
    appendAllocation(trace_, at, free, bytes, device, step, kind);
  }
  void step(int64_t index, Ns start, Ns end) { trace_.steps.push_back({index, start, end}); }
  void runtime(const std::string& rt) { trace_.run.runtime = rt; }

  // Sorted as TraceStore::load returns them.
  Trace build() const {
    Trace t = trace_;
    sortAsLoaded(t);
    return t;
  }

 private:
  Trace trace_;
};

}  // namespace gcprof::testing

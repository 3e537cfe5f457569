// Which memory series each allocation of a run belongs to: persistent memory
// (alive across a step boundary: parameters, gradients, optimizer state), the
// activations of one unit (allocated inside that unit's forward range), or the
// rest. Also finds the units themselves when no plan names them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "palette.h"
#include "trace.h"

namespace gcprof::advisor {
struct AllocationFilter;
}

namespace gcprof::view {

// Series ids: 0 persistent, 1 other, 2 + i activations of unit i.
constexpr uint16_t kSeriesPersistent = 0;
constexpr uint16_t kSeriesOther = 1;
constexpr uint16_t kFirstUnitSeries = 2;
// Allocations the memory view does not count (allocator segments when the
// run also has tensor-level events, or another memory space).
constexpr uint16_t kSeriesIgnored = 0xFFFF;

struct Unit {
  std::string name;  // qualified module name, "layers.3"
  Rgba colour;
};

// Which allocations make up "memory" for a run: on a CUDA run the device's
// tensors (segments are the caching allocator's reserve, drawn separately
// would double count); on a host run every heap allocation.
struct MemorySpace {
  bool device = false;  // false: host heap (device == -1)
  std::string describe() const { return device ? "device tensors" : "host heap"; }
};

class SeriesAssignment {
 public:
  // `unit_names` in forward order (from a plan); empty = detect them.
  SeriesAssignment(const Trace& trace, std::vector<std::string> unit_names = {});

  const std::vector<Unit>& units() const { return units_; }
  size_t seriesCount() const { return kFirstUnitSeries + units_.size(); }
  uint16_t seriesOf(size_t allocation_index) const { return series_[allocation_index]; }
  const std::vector<uint16_t>& series() const { return series_; }
  // Unit index of range `range_index` (its own or its enclosing unit), -1 = none.
  int unitOfRange(size_t range_index) const { return range_unit_[range_index]; }
  int unitIndex(const std::string& name) const;
  std::string seriesName(uint16_t series) const;
  Rgba seriesColour(uint16_t series) const;
  const MemorySpace& space() const { return space_; }

  // The repeated blocks of a model: at the module depth where most forward
  // ranges are named "<prefix>.<number>" with one prefix ("layers.0".."layers.7").
  // Falls back to the shallowest depth with two or more distinct names.
  static std::vector<std::string> detectUnits(const Trace& trace);
  // The same, the memory filter given (primaryFilter's: one pass less).
  static std::vector<std::string> detectUnits(const Trace& trace, const advisor::AllocationFilter& filter);

 private:
  std::vector<Unit> units_;
  std::vector<uint16_t> series_;
  std::vector<int> range_unit_;
  MemorySpace space_;
};

}  // namespace gcprof::view

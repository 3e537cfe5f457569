#include "units/streamed_module_stats.h"

#include <array>
#include <memory>

#include "units/saved_bytes_sweep.h"

namespace gcprof::advisor {
namespace {

// The memories primaryFilter chooses from, by what a row is.
const std::array<AllocationFilter, 3> kMemories{hostFilter(), AllocationFilter{true, AllocKind::Tensor, -1},
                                                 AllocationFilter{true, AllocKind::Segment, -1}};
size_t memoryOf(bool device, int kind) { return !device ? 0 : kind == static_cast<int>(AllocKind::Segment) ? 2 : 1; }

}  // namespace

// Which memory counts is known only once every row is read, so the saved
// bytes are swept for each memory it may choose in the same read (a second
// read of the run cost more than a third of show's time at 10M). A
// memory's sweep starts at its first row: a sweep reads its own rows only,
// and none came before; a host run holds one sweep.
StreamedModuleStats streamedModuleStats(const std::vector<Range>& ranges, const AllocationPass& allocations) {
  const ModuleRanges module_ranges = moduleRanges(ranges);
  std::array<std::unique_ptr<SavedBytesSweep>, 3> saved;
  ParameterGathers gathers(ranges);
  StreamedModuleStats out;
  out.survey = surveyCurve([&](const AllocationPiece& take) {
    allocations([&](const std::vector<Allocation>& rows) {
      take(rows);
      for (const Allocation& a : rows) {
        const size_t m = memoryOf(a.device >= 0, a.kind);
        if (!saved[m]) saved[m] = std::make_unique<SavedBytesSweep>(module_ranges, kMemories[m]);
        for (const auto& s : saved)
          if (s) s->add(a);
        gathers.add(a);
      }
    });
  });
  const AllocationFilter& f = out.survey.filter;
  const auto& chosen = saved[memoryOf(f.device, static_cast<int>(f.kind))];
  out.modules = moduleStats(module_ranges, chosen ? *chosen : SavedBytesSweep(module_ranges, f));
  out.gathers = gathers.byModule();
  return out;
}

}  // namespace gcprof::advisor

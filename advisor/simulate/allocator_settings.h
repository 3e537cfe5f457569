// The settings of PyTorch's CUDA caching allocator a job ran with, read from
// its PYTORCH_CUDA_ALLOC_CONF (recorded in runs.env), as far as they change
// how much memory the allocator reserves: the backend, expandable_segments,
// max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions.
// The grammar is c10's (c10/core/AllocatorConfig.cpp, parseArgs): `key:value`
// pairs separated by commas, spaces ignored, divisions either one power of
// two or a list `[256:1,512:2,>:8]` keyed by sizes in MiB.
#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <string>

#include "trace.h"

namespace gcprof::advisor {

struct AllocatorSettings {
  // Intervals of roundup_power2_divisions: one per power of two from 1 MiB
  // (index 0, and everything smaller) to 32 GiB and above (index 15), as
  // c10's kRoundUpPowerOfTwoIntervals.
  static constexpr size_t kDivisionIntervals = 16;

  bool native = true;               // backend:native; false: backend:cudaMallocAsync
  bool expandable_segments = false;
  Bytes max_split_size = std::numeric_limits<Bytes>::max();  // unset: no limit
  Bytes max_non_split_rounding = 20 << 20;                    // kLargeBuffer unless set
  std::array<size_t, kDivisionIntervals> roundup_power2_divisions{};  // 0: off
  double garbage_collection_threshold = 0;  // parsed, not modelled
  std::string text;                 // as the job set it ("" = the defaults)

  // The divisions that apply to a request of `size` bytes.
  size_t divisionsFor(Bytes size) const;

  // Throws std::invalid_argument naming the bad part.
  static AllocatorSettings parse(const std::string& conf);
  // From a run's recorded environment (a JSON object); the defaults when the
  // variable was not set.
  static AllocatorSettings fromRunEnvironment(const std::string& env_json);
};

}  // namespace gcprof::advisor

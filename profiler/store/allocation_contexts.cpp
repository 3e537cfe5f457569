#include "allocation_contexts.h"

#include <stdexcept>

namespace gcprof {

uint32_t AllocationContexts::lookup(const AllocationContext& c) {
  auto found = index_.find(c);
  if (found != index_.end()) return found->second;
  if (contexts_.size() > UINT32_MAX)
    throw std::length_error("more than 2^32 distinct (stream, thread) pairs in one run");
  const auto i = static_cast<uint32_t>(contexts_.size());
  contexts_.push_back(c);
  index_.emplace(c, i);
  return i;
}

}  // namespace gcprof

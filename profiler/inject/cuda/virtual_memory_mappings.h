// CUDA's virtual-memory API, which PyTorch's expandable segments use:
// cuMemCreate makes physical memory behind an opaque handle, cuMemMap puts it
// at a device address, cuMemUnmap takes it away, cuMemRelease drops the handle.
// We record a *mapping* as the allocation (its address is what tensors point
// into, its bytes are the physical memory behind it) and free it at unmap;
// this table remembers what the handles are and which mappings are live, so
// an unmap of a whole reserved range frees every mapping inside it.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "own_lock.h"

namespace gcprof::inject::cuda {

class VirtualMemoryMappings {
 public:
  struct Mapping {
    uint64_t addr = 0;
    int64_t bytes = 0;
    int device = -1;
  };

  void created(uint64_t handle, int64_t bytes, int device);
  // The device of a created handle; -1 when the handle was created before
  // recording began.
  int deviceOf(uint64_t handle) const;
  void released(uint64_t handle);

  void mapped(uint64_t addr, int64_t bytes, int device);
  // The live mappings inside [addr, addr + bytes), now forgotten.
  std::vector<Mapping> unmapped(uint64_t addr, int64_t bytes);

  size_t liveHandles() const;
  size_t liveMappings() const;

 private:
  struct Handle {
    int64_t bytes = 0;
    int device = -1;
  };
  mutable OwnLock lock_;
  std::unordered_map<uint64_t, Handle> handles_;
  std::map<uint64_t, Mapping> mappings_;  // by address
};

}  // namespace gcprof::inject::cuda

#include "virtual_memory_mappings.h"

#include <mutex>

namespace gcprof::inject::cuda {

void VirtualMemoryMappings::created(uint64_t handle, int64_t bytes, int device) {
  std::lock_guard<OwnLock> guard(lock_);
  handles_[handle] = Handle{bytes, device};
}

int VirtualMemoryMappings::deviceOf(uint64_t handle) const {
  std::lock_guard<OwnLock> guard(lock_);
  auto it = handles_.find(handle);
  return it == handles_.end() ? -1 : it->second.device;
}

void VirtualMemoryMappings::released(uint64_t handle) {
  std::lock_guard<OwnLock> guard(lock_);
  handles_.erase(handle);
}

void VirtualMemoryMappings::mapped(uint64_t addr, int64_t bytes, int device) {
  std::lock_guard<OwnLock> guard(lock_);
  mappings_[addr] = Mapping{addr, bytes, device};
}

std::vector<VirtualMemoryMappings::Mapping> VirtualMemoryMappings::unmapped(uint64_t addr,
                                                                            int64_t bytes) {
  std::vector<Mapping> gone;
  std::lock_guard<OwnLock> guard(lock_);
  const uint64_t end = addr + static_cast<uint64_t>(bytes);
  for (auto it = mappings_.lower_bound(addr); it != mappings_.end() && it->first < end;) {
    gone.push_back(it->second);
    it = mappings_.erase(it);
  }
  return gone;
}

size_t VirtualMemoryMappings::liveHandles() const {
  std::lock_guard<OwnLock> guard(lock_);
  return handles_.size();
}

size_t VirtualMemoryMappings::liveMappings() const {
  std::lock_guard<OwnLock> guard(lock_);
  return mappings_.size();
}

}  // namespace gcprof::inject::cuda

#include "address_set.h"

#include <sched.h>
#include <sys/mman.h>

#include <cstring>
#include <new>

namespace gcprof::inject {
namespace {

uint64_t hashOf(uint64_t addr) {
  // Allocations are at least 16-byte aligned: drop the always-zero bits.
  return (addr >> 4) * 0x9E3779B97F4A7C15ull;
}

// The slot comes from the hash's middle bits (the top byte picks the
// shard). Its low bits depend only on the address's low bits, which the
// alignment fixes (64 bytes for PyTorch's CPU tensors, a page for mmap'ed
// blocks): as the slot they gathered aligned blocks on a few home slots.
uint32_t slotOf(uint64_t h, uint32_t slots) { return static_cast<uint32_t>(h >> 32) % slots; }

class Guard {
 public:
  explicit Guard(std::atomic<bool>& l) : l_(l) {
    while (l_.exchange(true, std::memory_order_acquire)) sched_yield();
  }
  ~Guard() { l_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool>& l_;
};

}  // namespace

bool AddressSet::reserve(Shard& s) {
  if (s.slots) return true;
  void* mem = mmap(nullptr, kSlots * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  s.slots = static_cast<uint64_t*>(mem);
  return true;
}

bool AddressSet::insert(uint64_t addr) {
  uint64_t h = hashOf(addr);
  Shard& s = shard(h);
  Guard g(s.lock);
  // Keep the load under 3/4 so probes stay short.
  if (!reserve(s) || s.used >= kSlots / 4 * 3) return false;
  for (uint32_t i = slotOf(h, kSlots);; i = (i + 1) % kSlots) {
    if (s.slots[i] == addr) return true;
    if (s.slots[i] == 0) {
      s.slots[i] = addr;
      ++s.used;
      size_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
}

bool AddressSet::erase(uint64_t addr) {
  uint64_t h = hashOf(addr);
  Shard& s = shard(h);
  Guard g(s.lock);
  if (!s.slots) return false;
  uint32_t i = slotOf(h, kSlots);
  while (s.slots[i] != addr) {
    if (s.slots[i] == 0) return false;
    i = (i + 1) % kSlots;
  }
  // Backward-shift deletion: no tombstones, so misses stay one or two probes.
  uint32_t hole = i;
  for (uint32_t j = (i + 1) % kSlots; s.slots[j] != 0; j = (j + 1) % kSlots) {
    uint32_t home = slotOf(hashOf(s.slots[j]), kSlots);
    bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      s.slots[hole] = s.slots[j];
      hole = j;
    }
  }
  s.slots[hole] = 0;
  --s.used;
  size_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool AddressSet::contains(uint64_t addr) {
  uint64_t h = hashOf(addr);
  Shard& s = shard(h);
  Guard g(s.lock);
  if (!s.slots) return false;
  for (uint32_t i = slotOf(h, kSlots); s.slots[i] != 0; i = (i + 1) % kSlots)
    if (s.slots[i] == addr) return true;
  return false;
}

AddressSet& liveAddresses() {
  // Never destroyed: frees can arrive after static destructors have run.
  alignas(AddressSet) static char storage[sizeof(AddressSet)];
  static AddressSet* set = new (storage) AddressSet();
  return *set;
}

}  // namespace gcprof::inject

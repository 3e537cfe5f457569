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
uint32_t slotOf(uint64_t h, uint32_t mask) { return static_cast<uint32_t>(h >> 32) & mask; }

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

// Doubles the shard's table (under its lock). false at kMaxSlots or when the
// system refuses memory: the shard stays as it is.
bool AddressSet::grow(Shard& s) {
  uint32_t slots = s.mask + 1;
  if (slots >= kMaxSlots) return false;
  uint32_t mask = slots * 2 - 1;
  void* mem = mmap(nullptr, (mask + 1) * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return false;
  auto* fresh = static_cast<uint64_t*>(mem);
  uint64_t* old = s.slots;
  for (uint32_t i = 0; i < slots; ++i) {
    if (old[i] == 0) continue;
    uint32_t j = slotOf(hashOf(old[i]), mask);
    while (fresh[j] != 0) j = (j + 1) & mask;
    fresh[j] = old[i];
  }
  if (old < first_slots_ || old >= first_slots_ + kShards * kFirstSlots)
    munmap(old, slots * sizeof(uint64_t));
  s.slots = fresh;
  s.mask = mask;
  return true;
}

bool AddressSet::insert(uint64_t addr) {
  uint64_t h = hashOf(addr);
  Shard& s = shard(h);
  Guard g(s.lock);
  // Keep the load under 3/4 so probes stay short.
  if (s.used >= (s.mask + 1) / 4 * 3 && !grow(s)) return false;
  uint64_t* slots = s.slots;
  for (uint32_t i = slotOf(h, s.mask);; i = (i + 1) & s.mask) {
    if (slots[i] == addr) return true;
    if (slots[i] == 0) {
      slots[i] = addr;
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
  if (s.used == 0) return false;
  uint64_t* slots = s.slots;
  uint32_t mask = s.mask;
  uint32_t i = slotOf(h, mask);
  while (slots[i] != addr) {
    if (slots[i] == 0) return false;
    i = (i + 1) & mask;
  }
  // Backward-shift deletion: no tombstones, so misses stay one or two probes.
  uint32_t hole = i;
  for (uint32_t j = (i + 1) & mask; slots[j] != 0; j = (j + 1) & mask) {
    uint32_t home = slotOf(hashOf(slots[j]), mask);
    bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      slots[hole] = slots[j];
      hole = j;
    }
  }
  slots[hole] = 0;
  --s.used;
  size_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool AddressSet::contains(uint64_t addr) {
  uint64_t h = hashOf(addr);
  Shard& s = shard(h);
  Guard g(s.lock);
  if (s.used == 0) return false;
  uint64_t* slots = s.slots;
  for (uint32_t i = slotOf(h, s.mask); slots[i] != 0; i = (i + 1) & s.mask)
    if (slots[i] == addr) return true;
  return false;
}

uint64_t AddressSet::tableBytes() {
  uint64_t bytes = 0;
  for (Shard& s : shards_) {
    Guard g(s.lock);
    if (s.mask + 1 > kFirstSlots) bytes += (s.mask + 1) * sizeof(uint64_t);
  }
  return bytes + sizeof first_slots_;
}

AddressSet& liveAddresses() {
  // Never destroyed: frees can arrive after static destructors have run.
  alignas(AddressSet) static char storage[sizeof(AddressSet)];
  static AddressSet* set = new (storage) AddressSet();
  return *set;
}

}  // namespace gcprof::inject

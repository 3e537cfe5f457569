#include "name_table.h"

#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstring>

namespace gcprof::inject {
namespace {

constexpr uint32_t kBuckets = 1 << 16;
constexpr size_t kArenaBytes = 8 << 20;  // 8 MiB of distinct names is plenty
// Module paths are far shorter; a longer name keeps its first bytes and a
// hash of the whole (kTagLen chars), so distinct names never merge.
constexpr size_t kMaxName = 16384;
constexpr size_t kTagLen = 17;  // '#' and 16 hex digits

struct Entry {
  uint64_t hash;
  Entry* next;
  char text[1];
};

std::atomic<Entry*>* g_buckets = nullptr;
char* g_arena = nullptr;
size_t g_used = 0;
std::atomic<bool> g_lock{false};  // taken only when a new name is added

uint64_t fnv1a(const char* s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
  return h;
}

Entry* find(Entry* e, uint64_t h, const char* s, size_t n) {
  for (; e; e = e->next)
    if (e->hash == h && std::strncmp(e->text, s, n) == 0 && e->text[n] == 0) return e;
  return nullptr;
}

bool setUp() {
  void* b = mmap(nullptr, kBuckets * sizeof(std::atomic<Entry*>) + kArenaBytes,
                 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (b == MAP_FAILED) return false;
  g_buckets = static_cast<std::atomic<Entry*>*>(b);
  g_arena = static_cast<char*>(b) + kBuckets * sizeof(std::atomic<Entry*>);
  return true;
}

}  // namespace

const char* internName(const char* name) {
  static const char* const kFull = "<names full>";
  if (!name) name = "";
  size_t n = strnlen(name, kMaxName + 1);
  char cut[kMaxName + 1];
  if (n > kMaxName) {
    uint64_t whole = fnv1a(name, std::strlen(name));
    n = kMaxName - kTagLen;
    std::memcpy(cut, name, n);
    cut[n++] = '#';
    for (int i = 15; i >= 0; --i) cut[n++] = "0123456789abcdef"[(whole >> (4 * i)) & 0xf];
    cut[n] = 0;
    name = cut;
  }
  uint64_t h = fnv1a(name, n);
  if (!g_buckets) {
    while (g_lock.exchange(true, std::memory_order_acquire)) sched_yield();
    bool ok = g_buckets || setUp();
    g_lock.store(false, std::memory_order_release);
    if (!ok) return kFull;
  }
  std::atomic<Entry*>& bucket = g_buckets[h % kBuckets];
  // Lock-free lookup: entries are published once and never change.
  if (Entry* e = find(bucket.load(std::memory_order_acquire), h, name, n)) return e->text;
  while (g_lock.exchange(true, std::memory_order_acquire)) sched_yield();
  const char* result = kFull;
  if (Entry* e = find(bucket.load(std::memory_order_acquire), h, name, n)) {
    result = e->text;
  } else {
    size_t need = (offsetof(Entry, text) + n + 1 + 15) & ~size_t{15};
    if (g_used + need <= kArenaBytes) {
      Entry* e = reinterpret_cast<Entry*>(g_arena + g_used);
      g_used += need;
      e->hash = h;
      e->next = bucket.load(std::memory_order_relaxed);
      std::memcpy(e->text, name, n);
      e->text[n] = 0;
      bucket.store(e, std::memory_order_release);
      result = e->text;
    }
  }
  g_lock.store(false, std::memory_order_release);
  return result;
}

}  // namespace gcprof::inject

#include "activity_buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>

namespace gcprof::inject::cuda {

ActivityBufferPool::ActivityBufferPool(size_t buffer_bytes, size_t max_buffers)
    : buffer_bytes_(buffer_bytes), max_buffers_(max_buffers) {
  all_.reserve(max_buffers_);
  idle_.reserve(max_buffers_);
}

ActivityBufferPool::~ActivityBufferPool() {
  for (uint8_t* b : all_) munmap(b, buffer_bytes_);
}

uint8_t* ActivityBufferPool::acquire() {
  std::lock_guard<OwnLock> guard(lock_);
  if (!idle_.empty()) {
    uint8_t* b = idle_.back();
    idle_.pop_back();
    ++in_use_;
    return b;
  }
  if (all_.size() < max_buffers_) {
    void* p =
        mmap(nullptr, buffer_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      all_.push_back(static_cast<uint8_t*>(p));
      ++in_use_;
      return static_cast<uint8_t*>(p);
    }
  }
  ++refused_;
  return nullptr;
}

void ActivityBufferPool::release(uint8_t* buffer) {
  std::lock_guard<OwnLock> guard(lock_);
  if (!buffer || std::find(all_.begin(), all_.end(), buffer) == all_.end()) return;
  if (std::find(idle_.begin(), idle_.end(), buffer) != idle_.end()) return;  // double release
  idle_.push_back(buffer);
  --in_use_;
}

size_t ActivityBufferPool::inUse() const {
  std::lock_guard<OwnLock> guard(lock_);
  return in_use_;
}

size_t ActivityBufferPool::refused() const {
  std::lock_guard<OwnLock> guard(lock_);
  return refused_;
}

bool ActivityBufferPool::owns(const uint8_t* buffer) const {
  std::lock_guard<OwnLock> guard(lock_);
  return std::find(all_.begin(), all_.end(), buffer) != all_.end();
}

}  // namespace gcprof::inject::cuda

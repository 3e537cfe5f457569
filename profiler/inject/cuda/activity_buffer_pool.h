// The memory CUPTI writes activity records into: a fixed number of fixed-size
// buffers, so the injector's footprint stays bounded however many kernels the
// job launches. When every buffer is still waiting to be drained the request
// is refused; CUPTI then drops records and counts them, and the backend
// reports that count in the run (RunInfo::dropped_events).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "own_lock.h"

namespace gcprof::inject::cuda {

class ActivityBufferPool {
 public:
  // Kineto uses a few MB per buffer; 16 x 1 MiB keeps us well under the
  // injector's memory cap while holding ~100k kernel records in flight.
  static constexpr size_t kDefaultBufferBytes = 1 << 20;
  static constexpr size_t kDefaultMaxBuffers = 16;

  explicit ActivityBufferPool(size_t buffer_bytes = kDefaultBufferBytes,
                              size_t max_buffers = kDefaultMaxBuffers);
  ~ActivityBufferPool();
  ActivityBufferPool(const ActivityBufferPool&) = delete;
  ActivityBufferPool& operator=(const ActivityBufferPool&) = delete;

  // A buffer of bufferBytes() bytes (8-byte aligned, as CUPTI requires), or
  // nullptr when all max_buffers are handed out. Memory comes from mmap, not
  // malloc, so the injector's own malloc hook never sees it.
  uint8_t* acquire();
  // Gives a buffer back; buffers not from this pool are ignored.
  void release(uint8_t* buffer);

  size_t bufferBytes() const { return buffer_bytes_; }
  size_t maxBuffers() const { return max_buffers_; }
  size_t inUse() const;
  size_t refused() const;  // requests turned down because every buffer was out
  bool owns(const uint8_t* buffer) const;

 private:
  const size_t buffer_bytes_;
  const size_t max_buffers_;
  mutable OwnLock lock_;
  // Reserved once in the constructor (max_buffers_ entries): never grows later.
  std::vector<uint8_t*> all_;
  std::vector<uint8_t*> idle_;
  size_t in_use_ = 0;
  size_t refused_ = 0;
};

}  // namespace gcprof::inject::cuda

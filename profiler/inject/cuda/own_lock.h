// Our own mutex, which knows whether the calling thread holds it. CUPTI takes
// its own locks around every callback and buffer hand-over; calling CUPTI
// while holding ours invites a lock-order deadlock, so nothing that holds an
// OwnLock may call CUPTI. The test double of CUPTI checks heldByThisThread()
// on every call so a violation fails the tests.
#pragma once

#include <mutex>

namespace gcprof::inject::cuda {

class OwnLock {
 public:
  void lock() {
    mutex_.lock();
    ++depth();
  }
  void unlock() {
    --depth();
    mutex_.unlock();
  }
  // True while the calling thread holds any OwnLock.
  static bool heldByThisThread() { return depth() > 0; }

 private:
  static int& depth() {
    static thread_local int d = 0;  // a plain int: no TLS constructor, dlopen-safe
    return d;
  }
  std::mutex mutex_;
};

}  // namespace gcprof::inject::cuda

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "activity_buffer_pool.h"

namespace gcprof::inject::cuda {
namespace {

TEST(CuptiActivityBufferPool, HandsOutAtMostMaxBuffers) {
  ActivityBufferPool pool(4096, 3);
  std::vector<uint8_t*> held;
  for (int i = 0; i < 3; ++i) {
    uint8_t* b = pool.acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 8, 0u) << "CUPTI needs 8-byte aligned buffers";
    b[0] = 1;
    b[4095] = 2;  // the whole buffer is writable
    held.push_back(b);
  }
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 1u);
  EXPECT_EQ(pool.inUse(), 3u);
  pool.release(held[1]);
  EXPECT_EQ(pool.acquire(), held[1]) << "a returned buffer is reused, not a new one mapped";
}

TEST(CuptiActivityBufferPool, IgnoresForeignAndRepeatedReleases) {
  ActivityBufferPool pool(4096, 2);
  uint8_t* b = pool.acquire();
  uint8_t foreign[64];
  pool.release(foreign);
  pool.release(nullptr);
  EXPECT_EQ(pool.inUse(), 1u);
  pool.release(b);
  pool.release(b);
  EXPECT_EQ(pool.inUse(), 0u);
  EXPECT_NE(pool.acquire(), nullptr);
  EXPECT_NE(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr) << "a double release must not grow the pool";
}

}  // namespace
}  // namespace gcprof::inject::cuda

// A started CudaBackend on a FakeCupti, with the recorder test double reset:
// the common ground of the tests that play CUPTI's part.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "cuda_backend.h"
#include "fake_cupti.h"
#include "recorder_test_double.h"

namespace gcprof::inject::cuda::testing {

class CuptiBackendFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    test_double::reset();
    fake.devices[context] = 3;
    fake.streams[stream] = 42;
  }
  void TearDown() override {
    if (backend) backend->stop();
    EXPECT_EQ(fake.calls_under_own_lock, 0) << "the backend called CUPTI holding its own lock";
  }
  CudaBackend& start(CudaBackendOptions options = {}) {
    backend = std::make_unique<CudaBackend>(fake, options);
    EXPECT_TRUE(backend->start()) << backend->failure();
    return *backend;
  }
  const test_double::RecorderLog& log() const { return test_double::log(); }

  FakeCupti fake;
  std::unique_ptr<CudaBackend> backend;
  CUcontext context = reinterpret_cast<CUcontext>(0x1000);
  CUstream stream = reinterpret_cast<CUstream>(0x2000);
};

}  // namespace gcprof::inject::cuda::testing

// Starting the backend: what it enables, and the one-line refusals that leave
// the job to the host backend (no CUPTI, too old, another client, errors).
#include <cstring>

#include "cupti_backend_fixture.h"
#include "own_lock.h"

namespace gcprof::inject::cuda::testing {
namespace {

using CuptiBackendStart = CuptiBackendFixture;

TEST_F(CuptiBackendStart, EnablesCallbacksKernelAndMemoryRecordsOnTheHostClock) {
  start();
  EXPECT_TRUE(fake.subscribed);
  EXPECT_TRUE(fake.enabled_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  EXPECT_TRUE(fake.enabled_kinds.count(CUPTI_ACTIVITY_KIND_MEMORY2));
  EXPECT_TRUE(backend->clock().usesHostClock());
  ASSERT_NE(fake.timestamp_callback, nullptr);
  test_double::setNow(987654321);
  EXPECT_EQ(fake.timestamp_callback(), 987654321u) << "CUPTI must stamp with recorder nowNs()";
  EXPECT_EQ(log().backend, "host") << "cuda only once a context exists";
  fake.fireContextCreated();
  EXPECT_EQ(log().backend, "cuda");
}

TEST_F(CuptiBackendStart, StopFlushesThenDisablesEverything) {
  start();
  backend->stop();
  EXPECT_EQ(fake.flushes, 1);
  EXPECT_FALSE(fake.subscribed);
  EXPECT_TRUE(fake.enabled_kinds.empty());
  backend.reset();
}

TEST_F(CuptiBackendStart, MissingLibraryFailsWithItsReasonAndCallsNothing) {
  fake.is_available = false;
  CudaBackend b(fake);
  EXPECT_FALSE(b.start());
  EXPECT_STREQ(b.failure(), "fake libcupti.so not found");
  EXPECT_EQ(fake.calls, 0);
}

TEST_F(CuptiBackendStart, TooOldCuptiIsRefused) {
  fake.version = 12;  // CUDA 10.x
  CudaBackend b(fake);
  EXPECT_FALSE(b.start());
  EXPECT_NE(std::strstr(b.failure(), "too old"), nullptr) << b.failure();
  EXPECT_FALSE(fake.subscribed);
}

TEST_F(CuptiBackendStart, AnotherCuptiClientIsNamedInTheFailure) {
  fake.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  CudaBackend b(fake);
  EXPECT_FALSE(b.start());
  EXPECT_NE(std::strstr(b.failure(), "another CUPTI client"), nullptr) << b.failure();
  EXPECT_EQ(std::strchr(b.failure(), '\n'), nullptr) << "one line";
}

TEST_F(CuptiBackendStart, ALateFailureUndoesTheSubscription) {
  fake.kernel_enable_result = CUPTI_ERROR_NOT_SUPPORTED;
  CudaBackend b(fake);
  EXPECT_FALSE(b.start());
  EXPECT_NE(std::strstr(b.failure(), "CONCURRENT_KERNEL"), nullptr) << b.failure();
  EXPECT_FALSE(fake.subscribed);
  EXPECT_TRUE(fake.enabled_kinds.empty());
  // ...and leaves the way free for a later start.
  fake.kernel_enable_result = CUPTI_SUCCESS;
  CudaBackend again(fake);
  EXPECT_TRUE(again.start()) << again.failure();
}

TEST_F(CuptiBackendStart, CallbacksAnOlderCuptiDoesNotKnowAreSkipped) {
  fake.unknown_cbids = {CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx};
  start();
  EXPECT_TRUE(fake.enabled_callbacks.count(
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}));
}

TEST_F(CuptiBackendStart, OnlyOneBackendPerProcess) {
  start();
  FakeCupti other;
  CudaBackend second(other);
  EXPECT_FALSE(second.start());
  EXPECT_EQ(other.calls, 1) << "refused before subscribing (only the version was read)";
}

// The fake's lock check is what guards the "no CUPTI call under our lock"
// rule; it must be able to fail.
TEST(CuptiOwnLock, TheFakeNoticesACallUnderOurLock) {
  FakeCupti fake;
  OwnLock lock;
  uint32_t v = 0;
  fake.getVersion(&v);
  EXPECT_EQ(fake.calls_under_own_lock, 0);
  {
    std::lock_guard<OwnLock> guard(lock);
    EXPECT_TRUE(OwnLock::heldByThisThread());
    fake.getVersion(&v);
  }
  EXPECT_FALSE(OwnLock::heldByThisThread());
  EXPECT_EQ(fake.calls_under_own_lock, 1);
}

}  // namespace
}  // namespace gcprof::inject::cuda::testing

// Activity records -> kernels and allocations: fabricated buffers delivered
// through the backend's own buffer callbacks, as CUPTI delivers them.

#include "cupti_backend_fixture.h"
#include "trace.h"

namespace gcprof::inject::cuda::testing {
namespace {

class CuptiRecords : public CuptiBackendFixture {
 protected:
  void launch(uint32_t corr,
              CUpti_CallbackId cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    int params = 0;  // launch parameters are not read
    fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_ENTER, &params, corr, nullptr,
                 context);
  }
};

TEST_F(CuptiRecords, KernelsCarryTheRangeOpenAtLaunchAndDeviceTime) {
  start();
  test_double::setCurrentRange(21);  // layers.0 forward
  launch(100);
  launch(101);
  test_double::setCurrentRange(22);  // layers.1 forward
  launch(102);
  test_double::setCurrentRange(0);
  launch(103);  // outside every range
  // The kernels finish later and arrive in one buffer, on CUPTI's clock.
  ASSERT_TRUE(fake.deliver({kernelRecord(100, 1000, 1400), kernelRecord(101, 1500, 1600),
                            kernelRecord(102, 1700, 2700, 0, 9, "attn_kernel"),
                            kernelRecord(103, 3000, 3100)}));
  ASSERT_EQ(log().kernels.size(), 4u);
  EXPECT_EQ(log().kernels[0].range, 21u);
  EXPECT_EQ(log().kernels[1].range, 21u);
  EXPECT_EQ(log().kernels[2].range, 22u);
  EXPECT_EQ(log().kernels[3].range, 0u);
  EXPECT_EQ(log().kernels[2].name, "attn_kernel");
  EXPECT_EQ(log().kernels[2].stream, 9);
  EXPECT_EQ(log().kernels[2].correlation, 102);
  // Host clock registered with CUPTI: the record times are host times already.
  EXPECT_EQ(log().kernels[2].start, 1700);
  EXPECT_EQ(log().kernels[2].end, 2700);
  EXPECT_EQ(backend->buffers().inUse(), 0u) << "the buffer goes back to the pool";
}

TEST_F(CuptiRecords, DriverLaunchesAndGraphLaunchesAreCorrelatedToo) {
  start();
  test_double::setCurrentRange(8);
  int params = 0;
  fake.fireApi(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER,
               &params, 200, nullptr, context);
  launch(201, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
  fake.deliver({kernelRecord(200, 10, 20), kernelRecord(201, 30, 40)});
  ASSERT_EQ(log().kernels.size(), 2u);
  EXPECT_EQ(log().kernels[0].range, 8u);
  EXPECT_EQ(log().kernels[1].range, 8u);
}

TEST_F(CuptiRecords, KernelTimesAreMappedWhenCuptiKeepsItsOwnClock) {
  fake.timestamp_callback_result = CUPTI_ERROR_NOT_SUPPORTED;  // an older CUPTI
  const uint64_t realtime = 1700000000000000000ull;
  fake.cupti_now = realtime;
  test_double::setNow(42000);  // host CLOCK_MONOTONIC when the backend samples
  start();
  EXPECT_FALSE(backend->clock().usesHostClock());
  fake.deliver({kernelRecord(1, realtime + 500, realtime + 800)});
  ASSERT_EQ(log().kernels.size(), 1u);
  EXPECT_EQ(log().kernels[0].start, 42500);
  EXPECT_EQ(log().kernels[0].end, 42800);
}

TEST_F(CuptiRecords, UntimedKernelRecordsAreSkipped) {
  start();
  fake.deliver({kernelRecord(1, 0, 0), kernelRecord(2, 50, 40), kernelRecord(3, 60, 70)});
  EXPECT_EQ(log().kernels.size(), 1u);
  EXPECT_EQ(backend->kernelRecords().untimed(), 2);
}

TEST_F(CuptiRecords, MemoryRecordsBecomeAllocationEvents) {
  start();
  fake.deliver({memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000100000,
                             1 << 20, 5000, 300, /*async=*/false),
                memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000200000, 256,
                             5100, 301, /*async=*/true, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 2, 13),
                memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x7f0000200000, 256,
                             5900, 302, true)});
  ASSERT_EQ(log().allocs.size(), 2u);
  EXPECT_EQ(log().allocs[0].kind, static_cast<int>(AllocKind::Segment));
  EXPECT_EQ(log().allocs[0].api, static_cast<int>(AllocApi::CuMemAlloc));
  EXPECT_EQ(log().allocs[0].time, 5000) << "the record's own (mapped) timestamp";
  EXPECT_EQ(log().allocs[1].kind, static_cast<int>(AllocKind::Tensor));
  EXPECT_EQ(log().allocs[1].api, static_cast<int>(AllocApi::CudaMallocAsync));
  EXPECT_EQ(log().allocs[1].device, 2);
  EXPECT_EQ(log().allocs[1].stream, 13);
  ASSERT_EQ(log().frees.size(), 1u);
  EXPECT_EQ(log().frees[0].addr, 0x7f0000200000u);
  EXPECT_EQ(log().frees[0].time, 5900);
}

TEST_F(CuptiRecords, MemoryRecordsOfCallsTheCallbacksRecordedAreNotCountedTwice) {
  start();
  void* out = nullptr;
  cudaMalloc_v3020_params p{&out, 4096};
  int rc = 0;
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
               CUPTI_API_ENTER, &p, 400, nullptr, context);
  out = reinterpret_cast<void*>(0x7f0000300000);
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
               CUPTI_API_EXIT, &p, 400, &rc, context);
  fake.deliver({memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x7f0000300000, 4096,
                             7000, 400)});
  EXPECT_EQ(log().allocs.size(), 1u);
  EXPECT_EQ(backend->memoryRecords().alreadyRecorded(), 1);
}

TEST_F(CuptiRecords, HostVisibleMemoryAndUnknownFreesAreNotDeviceAllocations) {
  start();
  fake.deliver(
      {memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x600000, 4096, 1, 500, false,
                    CUPTI_ACTIVITY_MEMORY_KIND_PINNED),
       memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION, 0x700000, 4096, 1, 501, false,
                    CUPTI_ACTIVITY_MEMORY_KIND_MANAGED),
       // Freed now, allocated before recording began.
       memoryRecord(CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE, 0x7f00000f0000, 1024, 2, 502)});
  EXPECT_TRUE(log().allocs.empty());
  EXPECT_TRUE(log().frees.empty());
  EXPECT_EQ(log().unmatched_frees, 1);
}

TEST_F(CuptiRecords, DroppedRecordsAreCountedInTheRun) {
  CudaBackendOptions small;
  small.max_buffers = 2;
  small.buffer_bytes = 4096;
  start(small);
  // CUPTI holds both buffers (busy device), asks for a third: refused.
  size_t s1 = 0, s2 = 0;
  uint8_t* b1 = fake.requestBuffer(&s1);
  uint8_t* b2 = fake.requestBuffer(&s2);
  ASSERT_NE(b1, nullptr);
  ASSERT_NE(b2, nullptr);
  EXPECT_EQ(s1, 4096u);
  EXPECT_FALSE(fake.deliver({kernelRecord(1, 1, 2), kernelRecord(2, 3, 4), kernelRecord(3, 5, 6)}));
  EXPECT_EQ(backend->buffers().refused(), 1u);
  // The next completed buffer reports what CUPTI dropped meanwhile.
  fake.completeBuffer(b1, s1, {kernelRecord(4, 7, 8)});
  EXPECT_EQ(log().dropped, 3);
  EXPECT_EQ(backend->droppedRecords(), 3);
  EXPECT_EQ(log().kernels.size(), 1u);
  fake.completeBuffer(b2, s2, {});
  EXPECT_EQ(backend->buffers().inUse(), 0u);
  // Enough records to overflow one 4 KiB buffer: what did not fit is dropped and counted.
  std::vector<FabricatedRecord> many(40, kernelRecord(5, 1, 2));
  fake.deliver(many);
  fake.deliver({});
  const int64_t size = sizeof(KernelRecord), aligned = (size + 7) / 8 * 8;
  const int64_t fit = (4096 - size) / aligned + 1;
  EXPECT_EQ(static_cast<int64_t>(log().kernels.size()), 1 + fit);
  EXPECT_EQ(log().dropped, 3 + 40 - fit);
}

}  // namespace
}  // namespace gcprof::inject::cuda::testing

// Runtime and driver API callbacks -> allocation events, with fabricated
// CUpti_CallbackData and the real parameter structs CUPTI passes.

#include "cupti_backend_fixture.h"
#include "trace.h"

namespace gcprof::inject::cuda::testing {
namespace {

constexpr int kOk = 0;
constexpr int kOutOfMemory = 2;  // cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY

class CuptiApiCallbacks : public CuptiBackendFixture {
 protected:
  void SetUp() override {
    CuptiBackendFixture::SetUp();
    start();
  }
  // cudaMalloc as CUPTI reports it: enter, then exit with the result.
  void cudaMalloc(void* result, size_t size, uint32_t corr, int rc = kOk) {
    void* out = nullptr;
    cudaMalloc_v3020_params p{&out, size};
    fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                 CUPTI_API_ENTER, &p, corr, nullptr, context);
    if (rc == kOk) out = result;
    fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                 CUPTI_API_EXIT, &p, corr, &rc, context);
  }
  void runtimeFree(CUpti_CallbackId cbid, void* ptr, uint32_t corr) {
    cudaFreeAsync_v11020_params p{ptr, reinterpret_cast<cudaStream_t>(stream)};
    int rc = kOk;
    fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_ENTER, &p, corr, nullptr, context);
    fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, CUPTI_API_EXIT, &p, corr, &rc, context);
  }
  void driver(CUpti_CallbackId cbid, const void* params, uint32_t corr, int rc = kOk) {
    fake.fireApi(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_ENTER, params, corr, nullptr, context);
    fake.fireApi(CUPTI_CB_DOMAIN_DRIVER_API, cbid, CUPTI_API_EXIT, params, corr, &rc, context);
  }
};

TEST_F(CuptiApiCallbacks, CudaMallocIsASegmentOnTheContextsDeviceInTheCurrentRange) {
  test_double::setCurrentRange(11);
  cudaMalloc(reinterpret_cast<void*>(0x7f0000000000), 1 << 20, 1);
  ASSERT_EQ(log().allocs.size(), 1u);
  const auto& a = log().allocs[0];
  EXPECT_EQ(a.addr, 0x7f0000000000u);
  EXPECT_EQ(a.bytes, 1 << 20);
  EXPECT_EQ(a.api, static_cast<int>(AllocApi::CudaMalloc));
  EXPECT_EQ(a.kind, static_cast<int>(AllocKind::Segment));
  EXPECT_EQ(a.device, 3);
  EXPECT_EQ(a.range, 11u);
  EXPECT_TRUE(a.force) << "device memory is recorded whatever --min-bytes says";
}

TEST_F(CuptiApiCallbacks, FailedAllocationRecordsNothing) {
  cudaMalloc(nullptr, 1 << 30, 1, kOutOfMemory);
  EXPECT_TRUE(log().allocs.empty());
}

TEST_F(CuptiApiCallbacks, CudaFreeIsReportedOnEntryAndNullIsIgnored) {
  cudaMalloc(reinterpret_cast<void*>(0x7f0000001000), 4096, 1);
  void* ptr = reinterpret_cast<void*>(0x7f0000001000);
  cudaFree_v3020_params p{ptr};
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
               CUPTI_API_ENTER, &p, 2, nullptr, context);
  const size_t freed_on_entry = log().frees.size();
  int rc = kOk;  // the call's exit always follows its entry
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, CUPTI_API_EXIT,
               &p, 2, &rc, context);
  ASSERT_EQ(freed_on_entry, 1u) << "the free must be out before the memory can be reused";
  EXPECT_EQ(log().frees[0].addr, 0x7f0000001000u);
  runtimeFree(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, nullptr, 3);
  EXPECT_EQ(log().frees.size(), 1u);
  EXPECT_EQ(log().unmatched_frees, 0);
}

TEST_F(CuptiApiCallbacks, CudaMallocAsyncIsATensorOnItsStream) {
  test_double::setCurrentRange(5);
  void* out = nullptr;
  cudaMallocAsync_v11020_params p{&out, 512, reinterpret_cast<cudaStream_t>(stream)};
  int rc = kOk;
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
               CUPTI_API_ENTER, &p, 1, nullptr, context);
  out = reinterpret_cast<void*>(0x7f0000002000);
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
               CUPTI_API_EXIT, &p, 1, &rc, context);
  ASSERT_EQ(log().allocs.size(), 1u);
  EXPECT_EQ(log().allocs[0].api, static_cast<int>(AllocApi::CudaMallocAsync));
  EXPECT_EQ(log().allocs[0].kind, static_cast<int>(AllocKind::Tensor));
  EXPECT_EQ(log().allocs[0].stream, 42) << "CUPTI's stream id, the one kernel records carry";
  EXPECT_EQ(log().allocs[0].bytes, 512);
  test_double::setCurrentRange(6);  // freed in another range (backward)
  runtimeFree(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020, out, 2);
  ASSERT_EQ(log().frees.size(), 1u);
  EXPECT_EQ(log().frees[0].addr, 0x7f0000002000u);
}

// cudaMalloc is implemented with cuMemAlloc, whose driver callback fires
// inside the runtime one: one allocation, not two.
TEST_F(CuptiApiCallbacks, DriverCallInsideRuntimeCallIsNotCountedTwice) {
  void* out = nullptr;
  cudaMalloc_v3020_params rp{&out, 8192};
  int rc = kOk;
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
               CUPTI_API_ENTER, &rp, 1, nullptr, context);
  CUdeviceptr dptr = 0x7f0000003000;
  cuMemAlloc_v2_params dp{&dptr, 8192};
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &dp, 2);
  out = reinterpret_cast<void*>(dptr);
  fake.fireApi(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
               CUPTI_API_EXIT, &rp, 1, &rc, context);
  ASSERT_EQ(log().allocs.size(), 1u);
  EXPECT_EQ(log().allocs[0].api, static_cast<int>(AllocApi::CudaMalloc));

  // A direct driver call (e.g. from a library) is recorded on its own.
  CUdeviceptr other = 0x7f0000009000;
  cuMemAlloc_v2_params dp2{&other, 100};
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &dp2, 3);
  ASSERT_EQ(log().allocs.size(), 2u);
  EXPECT_EQ(log().allocs[1].api, static_cast<int>(AllocApi::CuMemAlloc));
  cuMemFree_v2_params fp{other};
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, &fp, 4);
  EXPECT_EQ(log().frees.size(), 1u);
}

// PyTorch's expandable segments: physical chunks mapped into one reserved
// range, unmapped together at the end.
TEST_F(CuptiApiCallbacks, VirtualMemoryMappingsAreAllocationsUntilUnmapped) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 1;
  CUmemGenericAllocationHandle h1 = 0, h2 = 0;
  cuMemCreate_params c1{&h1, 2 << 20, &prop, 0};
  h1 = 0xaaa1;
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c1, 1);
  cuMemCreate_params c2{&h2, 2 << 20, &prop, 0};
  h2 = 0xaaa2;
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemCreate, &c2, 2);
  EXPECT_TRUE(log().allocs.empty()) << "memory counts once it is mapped, not twice";

  const CUdeviceptr base = 0x7f1000000000;
  cuMemMap_params m1{base, 2 << 20, 0, h1, 0};
  cuMemMap_params m2{base + (2 << 20), 2 << 20, 0, h2, 0};
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &m1, 3);
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemMap, &m2, 4);
  ASSERT_EQ(log().allocs.size(), 2u);
  EXPECT_EQ(log().allocs[1].addr, base + (2 << 20));
  EXPECT_EQ(log().allocs[1].device, 1) << "the device the handle was created on";
  EXPECT_EQ(log().allocs[1].api, static_cast<int>(AllocApi::CuMemMap));
  EXPECT_EQ(log().allocs[1].kind, static_cast<int>(AllocKind::Segment));

  cuMemUnmap_params u{base, 4 << 20};  // the whole reserved range at once
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &u, 5);
  EXPECT_EQ(log().frees.size(), 2u);
  cuMemRelease_params r1{h1}, r2{h2};
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &r1, 6);
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemRelease, &r2, 7);
  EXPECT_EQ(log().frees.size(), 2u);
  EXPECT_EQ(log().unmatched_frees, 0);
}

// Memory allocated before recording began: the free reaches the recorder,
// which does not know the address and counts it as unmatched.
TEST_F(CuptiApiCallbacks, FreeOfMemoryAllocatedBeforeRecordingIsUnmatched) {
  runtimeFree(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, reinterpret_cast<void*>(0x7f00deadb000), 1);
  EXPECT_TRUE(log().frees.empty());
  EXPECT_EQ(log().unmatched_frees, 1);
  cuMemUnmap_params u{0x7f2000000000, 2 << 20};  // a mapping we never saw: nothing to free
  driver(CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, &u, 2);
  EXPECT_EQ(log().unmatched_frees, 1);
}

TEST_F(CuptiApiCallbacks, NoCallbackIsLeftDisabledForTheMemoryAndLaunchCalls) {
  for (auto cbid :
       {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
        CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000})
    EXPECT_TRUE(fake.enabled_callbacks.count({CUPTI_CB_DOMAIN_RUNTIME_API, cbid})) << cbid;
  for (auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
                    CUPTI_DRIVER_TRACE_CBID_cuMemCreate, CUPTI_DRIVER_TRACE_CBID_cuMemMap,
                    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap, CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
                    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel})
    EXPECT_TRUE(fake.enabled_callbacks.count({CUPTI_CB_DOMAIN_DRIVER_API, cbid})) << cbid;
}

}  // namespace
}  // namespace gcprof::inject::cuda::testing

// CUPTI activity records with any field values (times, sizes, addresses,
// correlation ids, devices, streams, operation and memory kinds), delivered
// through the CUDA backend's own buffer callbacks as CUPTI delivers them:
// decoded into kernels and allocations without a crash or undefined
// behaviour (clock mapping and size arithmetic at the extremes included).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda_backend.h"
#include "fake_cupti.h"
#include "recorder_test_double.h"

using namespace gcprof::inject;
using namespace gcprof::inject::cuda;
using namespace gcprof::inject::cuda::testing;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  test_double::reset();
  test_double::setNow(in.ConsumeIntegral<int64_t>());
  FakeCupti fake;
  CUcontext context = reinterpret_cast<CUcontext>(0x1000);
  fake.devices[context] = in.ConsumeIntegral<uint32_t>();
  fake.cupti_now = in.ConsumeIntegral<uint64_t>();
  CudaBackend backend(fake);
  if (!backend.start()) return 0;
  while (in.remaining_bytes() > 0) {
    std::vector<FabricatedRecord> records;
    for (int n = in.ConsumeIntegralInRange(1, 16); n > 0 && in.remaining_bytes() > 0; --n) {
      if (in.ConsumeBool()) {
        records.push_back(kernelRecord(in.ConsumeIntegral<uint32_t>(), in.ConsumeIntegral<uint64_t>(),
                                       in.ConsumeIntegral<uint64_t>(), in.ConsumeIntegral<uint32_t>(),
                                       in.ConsumeIntegral<uint32_t>()));
      } else {
        auto op = static_cast<CUpti_ActivityMemoryOperationType>(in.ConsumeIntegralInRange(0, 3));
        auto kind = static_cast<CUpti_ActivityMemoryKind>(in.ConsumeIntegralInRange(0, 8));
        records.push_back(memoryRecord(op, in.ConsumeIntegral<uint64_t>(), in.ConsumeIntegral<uint64_t>(),
                                       in.ConsumeIntegral<uint64_t>(), in.ConsumeIntegral<uint32_t>(),
                                       in.ConsumeBool(), kind, in.ConsumeIntegral<uint32_t>(),
                                       in.ConsumeIntegral<uint32_t>()));
      }
    }
    fake.deliver(records, context);
  }
  backend.stop();
  return 0;
}

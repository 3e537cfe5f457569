#include "units/parameter_gathers.h"

#include <gtest/gtest.h>

#include "trace_builder.h"

namespace gcprof::advisor {
namespace {

int64_t userRange(Trace& t, const std::string& name) {
  Range r;
  r.id = static_cast<int64_t>(t.ranges.size()) + 1;
  r.name = name;
  r.domain = RangeDomain::User;
  t.ranges.push_back(r);
  return r.id;
}

void allocIn(Trace& t, int64_t range, Bytes bytes) {
  testing::appendAllocation(t, 10, 20, bytes);
  t.allocations.back().range = static_cast<int32_t>(range);
}

TEST(ParameterGathers, BytesAllocatedInsideEachModulesGathersByModuleName) {
  Trace t;
  const int64_t l1 = userRange(t, "fsdp.unshard layers.1");
  const int64_t l0a = userRange(t, "fsdp.unshard layers.0");
  const int64_t l0b = userRange(t, "fsdp.unshard layers.0");
  const int64_t other = userRange(t, "optimizer.step");
  allocIn(t, l0a, 100);
  allocIn(t, l0b, 200);
  allocIn(t, l1, 7);
  allocIn(t, other, 5000);
  allocIn(t, 0, 9000);
  ParameterGathers gathers(t.ranges);
  ASSERT_FALSE(gathers.none());
  for (const Allocation& a : t.allocations) gathers.add(a);
  const std::vector<ParameterGather>& g = gathers.byModule();
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].module, "layers.0");
  EXPECT_EQ(g[0].ranges, 2);
  EXPECT_EQ(g[0].bytes, 300);
  EXPECT_EQ(g[1].module, "layers.1");
  EXPECT_EQ(g[1].ranges, 1);
  EXPECT_EQ(g[1].bytes, 7);
}

TEST(ParameterGathers, ARunWithoutGathersNeedsNoRows) {
  Trace t;
  userRange(t, "optimizer.step");
  EXPECT_TRUE(ParameterGathers(t.ranges).none());
  EXPECT_TRUE(ParameterGathers(t.ranges).byModule().empty());
}

}  // namespace
}  // namespace gcprof::advisor

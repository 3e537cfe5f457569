// What modules that are not units hold at a plan's peak: a detector's heads
// (torchvision Faster R-CNN: RoI heads and RPN after the backbone's blocks)
// hold most of what no plan over the blocks can drop. advise names them
// when a budget is out of reach.
#include <gtest/gtest.h>

#include "chain_traces.h"
#include "units/outside_units.h"
#include "units/step_layout.h"

namespace gcprof::advisor {
namespace {

using testing::ChainSpec;

int64_t addRange(Trace& t, const std::string& name, Ns start, Ns end, int64_t parent) {
  Range r;
  r.id = 1000 + static_cast<int64_t>(t.ranges.size());
  r.name = name;
  r.domain = RangeDomain::Module;
  r.phase = Phase::Forward;
  r.start = start;
  r.end = end;
  r.parent = parent;
  t.ranges.push_back(r);
  return r.id;
}

void addAllocationIn(Trace& t, int64_t range, Ns at, Ns free, Bytes bytes) {
  testing::appendAllocation(t, at, free, bytes);
  t.allocations.back().range = range;
  testing::sortAsLoaded(t);
}

// After the three units' forward (layers.0..2 end by 350), a head runs at
// 400..430: roi_heads.box_head makes 500 bytes, the job's own code 70 after it.
struct HeadTrace {
  ChainSpec spec;
  Trace trace = testing::chainTrace(spec);
  HeadTrace() {
    int64_t heads = addRange(trace, "roi_heads", 400, 430, 0);
    int64_t box = addRange(trace, "roi_heads.box_head", 405, 420, heads);
    addAllocationIn(trace, box, 410, 1050, 500);
    addAllocationIn(trace, 0, 431, 1050, 70);
    addAllocationIn(trace, box, 415, 425, 40);  // freed before the moment asked about
  }
};

TEST(OutsideUnits, AHeadAfterTheBlocksIsNamedByItsOutermostModule) {
  HeadTrace h;
  std::vector<std::string> units = testing::unitNames(h.spec.units);
  RunLayout layout = stepLayouts(h.trace, units);
  ASSERT_EQ(layout.complete, 1u);
  OutsideUnits o = outsideUnits(h.trace, hostFilter(), layout, units, 440);
  EXPECT_EQ(o.total, 570);  // the units' saved tensors and outputs are not counted
  ASSERT_EQ(o.by_module.size(), 2u);
  EXPECT_EQ(o.by_module[0].module, "roi_heads");
  EXPECT_EQ(o.by_module[0].bytes, 500);
  EXPECT_EQ(o.by_module[1].module, "");
  EXPECT_EQ(o.describe(), "roi_heads 500 B, code outside modules 70 B");
}

TEST(OutsideUnits, WhatAUnitOrAModuleInsideOneMadeIsNotCounted) {
  HeadTrace h;
  int64_t inner = addRange(h.trace, "layers.2.mlp", 315, 340, 0);
  addAllocationIn(h.trace, inner, 320, 1050, 3000);  // the unit's own: a plan drops it
  std::vector<std::string> units = testing::unitNames(h.spec.units);
  RunLayout layout = stepLayouts(h.trace, units);
  EXPECT_EQ(outsideUnits(h.trace, hostFilter(), layout, units, 440).total, 570);
}

TEST(OutsideUnits, NothingOutsideACompleteStep) {
  HeadTrace h;
  std::vector<std::string> units = testing::unitNames(h.spec.units);
  RunLayout layout = stepLayouts(h.trace, units);
  EXPECT_EQ(outsideUnits(h.trace, hostFilter(), layout, units, 50).total, 0);
}

}  // namespace
}  // namespace gcprof::advisor

// The units' extra arguments a checkpoint holds (chain/checkpoint_arguments.h):
// HF GPT-2 passes each block an attention mask that the run without
// checkpoints frees when the model's forward returns, but the checkpointed
// run keeps until the first block's backward ends (the replay
// simulator was 1.8 MiB low on `every` at batch 29).
#include "chain/checkpoint_arguments.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "chain_run.h"
#include "chain/chain_peak.h"
#include "chain/unit_chain.h"
#include "simulate/replay_simulator.h"

namespace gcprof::advisor {
namespace {

using testing::chainTrace;
using testing::ChainSpec;
using testing::unitName;

constexpr Bytes kMask = 300, kPositions = 8, kEmbeddings = 100, kHidden = 100;

// The default chain of three units (chain_traces.h: outputs of 100 bytes,
// step at 100, forwards at 110, 210, 310, the gap 400..600, backwards at
// 610, 710, 810, each 40 long) with what GPT-2's model forward makes before
// its blocks:
//   - token embeddings, the hidden state's size, kept by the model's forward
//     until it returns (400) but passed to no block;
//   - the attention mask, passed to every block, freed at 420 as well;
//   - position ids, passed to every block, freed after the backward (950);
//   - the hidden state layers.0 is passed, saved by it (freed at 840).
// Every unit's call records the hidden state (100) plus mask and position
// ids as its input: `extra` is what it gets beyond the hidden state.
Trace gpt2LikeTrace(Bytes extra) {
  Trace t = chainTrace(ChainSpec{});
  testing::addAllocation(t, 102, 400, kEmbeddings);
  testing::addAllocation(t, 104, 420, kMask);
  testing::addAllocation(t, 106, 950, kPositions);
  testing::addAllocation(t, 108, 840, kHidden);
  for (Range& r : t.ranges) {
    if (r.domain != RangeDomain::Module || r.phase != Phase::Forward) continue;
    r.input_bytes = kHidden + extra;
    r.output_bytes = 100;
  }
  return t;
}

struct Fixture : testing::ChainRun {
  explicit Fixture(Trace t) : ChainRun(std::move(t), 3) {}
  const StepLayout& step() const { return firstStep(); }
};

TEST(CheckpointArguments, FindsTheArgumentsEveryUnitIsPassed) {
  Fixture f(gpt2LikeTrace(kMask + kPositions));
  const Range* call = checkpointedCall(f.trace, f.step(), 1, 1);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->name, unitName(1));
  std::vector<const Allocation*> args = callArguments(f.trace, f.filter, f.step(), *call);
  ASSERT_EQ(args.size(), 3u);  // the previous output, the mask and the position ids
  EXPECT_EQ(args[0]->bytes, kMask);
  EXPECT_EQ(args[1]->alloc, 140);  // layers.0's output (chain_traces.h: forward + 30)
  EXPECT_EQ(args[2]->bytes, kPositions);
  // layers.0's: the hidden state rather than the embeddings of the same
  // size, born before it (the later born is taken among equal sizes).
  args = callArguments(f.trace, f.filter, f.step(), *checkpointedCall(f.trace, f.step(), 0, 0));
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[1]->alloc, 108);
  // Only the mask is freed before the backward: the position ids are alive
  // through it in the recorded run already.
  EXPECT_EQ(argumentHolds(f.trace, f.filter, f.step(), 1).held, kMask);
  EXPECT_EQ(argumentHolds(f.trace, f.filter, f.step(), 1).freed, 420);  // the mask's free
  EXPECT_EQ(f.chain.held_arguments, (std::vector<Bytes>{kMask, kMask, kMask}));
}

// HF GPT-2's attention dropout mask is the attention mask's size: layers.0
// saves one (born at 135, freed in its backward at 840), which the match
// takes for layers.1 and layers.2 (the later born among equal sizes) where
// the mask was passed. Holding the mask would raise the peak, holding the
// dropout mask changes nothing: the mask's bytes are untold. A second tensor
// of that size freed in the forward (420) swaps with no more than the one
// dropout mask taken: still one mask's bytes.
TEST(CheckpointArguments, ATwinOfAHeldArgumentsSizeIsUntold) {
  Fixture exact(gpt2LikeTrace(kMask + kPositions));
  for (int k = 0; k < 3; ++k) EXPECT_EQ(argumentHolds(exact.trace, exact.filter, exact.step(), k).untold, 0) << k;
  EXPECT_EQ(exact.chain.untold_arguments, 0);

  Trace t = gpt2LikeTrace(kMask + kPositions);
  testing::addAllocation(t, 135, 840, kMask);
  Fixture twin(t);
  std::vector<const Allocation*> args =
      callArguments(twin.trace, twin.filter, twin.step(), *checkpointedCall(twin.trace, twin.step(), 1, 1));
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[0]->alloc, 135);  // the dropout mask taken
  EXPECT_EQ(argumentHolds(twin.trace, twin.filter, twin.step(), 0).untold, 0);  // born after layers.0 begins
  for (int k : {1, 2}) EXPECT_EQ(argumentHolds(twin.trace, twin.filter, twin.step(), k).untold, kMask) << k;
  EXPECT_EQ(twin.chain.untold_arguments, kMask);

  testing::addAllocation(t, 105, 420, kMask);
  Fixture two(std::move(t));
  EXPECT_EQ(two.chain.untold_arguments, kMask);
}

TEST(CheckpointArguments, NothingWhenTheSizesDoNotAddUp) {
  // 250 extra bytes: no set of the tensors alive across the forward adds up.
  Fixture odd(gpt2LikeTrace(250));
  EXPECT_TRUE(callArguments(odd.trace, odd.filter, odd.step(), *checkpointedCall(odd.trace, odd.step(), 1, 1))
                  .empty());
  EXPECT_EQ(odd.chain.held_arguments, (std::vector<Bytes>{0, 0, 0}));
  // Without recorded input sizes (native runs, older traces) nothing either.
  Fixture none(gpt2LikeTrace(0));
  for (Range& r : none.trace.ranges) r.input_bytes = r.output_bytes = 0;
  Fixture unrecorded(none.trace);
  EXPECT_EQ(unrecorded.chain.held_arguments, (std::vector<Bytes>{0, 0, 0}));
}

// HF Whisper under bf16 autocast: the encoder blocks' attention weights,
// saved for their backward, are nearly the size of everything a decoder block
// is passed. Units 0 and 1 are the encoder (each saves 490 bytes and is
// passed its hidden state, 100), unit 2 the first decoder block, passed its
// hidden state, the causal mask (300) and the encoder's output (100); the
// last two are made after the encoder and freed before the backward (420).
// Taken largest first, a saved 490 left 10 bytes nothing adds up to, so no
// arguments were found and the checkpointed run held 400 bytes more than
// predicted through the backward.
TEST(CheckpointArguments, AnEarlierUnitsSavedTensorIsNotAnArgument) {
  ChainSpec spec;
  spec.saved = 490;
  Trace t = chainTrace(spec);
  testing::addAllocation(t, 255, 420, kHidden);  // the encoder's output
  testing::addAllocation(t, 258, 420, kMask);    // the causal mask
  for (Range& r : t.ranges)
    if (r.domain == RangeDomain::Module && r.phase == Phase::Forward)
      r.input_bytes = r.name == unitName(2) ? kHidden + kMask + kHidden : kHidden;
  Fixture f(std::move(t));
  std::vector<const Allocation*> args =
      callArguments(f.trace, f.filter, f.step(), *checkpointedCall(f.trace, f.step(), 2, 2));
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0]->alloc, 258);  // the mask
  EXPECT_EQ(args[1]->alloc, 255);  // the encoder's output
  EXPECT_EQ(args[2]->alloc, 240);  // unit 1's output (forward + 30)
  EXPECT_EQ(f.chain.held_arguments, (std::vector<Bytes>{0, 0, kMask + kHidden}));
  const Segments every{{0, 0}, {1, 1}, {2, 2}};
  EXPECT_EQ(evaluateChain(f.chain, every).peak, f.simPeak(every));
}

// The highest live bytes from `from` on, on the simulated timeline.
Bytes peakFrom(const Fixture& f, const Segments& plan, Ns from) {
  Bytes peak = 0;
  for (const MemoryPoint& p : f.curve(plan).curve)
    if (p.time >= from) peak = std::max(peak, p.live);
  return peak;
}

// The same trace as a CUDA run records it: every tensor a cudaMallocAsync of
// its storage's exact size on device 0 (docs/cuda.md; PyTorch's cudaMallocAsync
// backend does not round), and host allocations besides, which the device
// filter leaves out even when one has the mask's size and lives as long.
Trace onDevice(Trace t, AllocKind kind) {
  std::vector<Allocation> host;
  for (Allocation& a : t.allocations) {
    Allocation h = a;  // the host twin: same size and lifetime, other memory
    h.addr += 0x10000000;
    host.push_back(h);
    a.device = 0;
    a.api = static_cast<int>(kind == AllocKind::Tensor ? AllocApi::CudaMallocAsync : AllocApi::CudaMalloc);
    a.kind = static_cast<int>(kind);
  }
  for (Allocation& h : host) {
    h.id += 1000;
    t.allocations.push_back(h);
  }
  std::stable_sort(t.allocations.begin(), t.allocations.end(),
                   [](const Allocation& a, const Allocation& b) { return a.alloc < b.alloc; });
  return t;
}

TEST(CheckpointArguments, CudaTensorRecordsMatchExactly) {
  Fixture f(onDevice(gpt2LikeTrace(kMask + kPositions), AllocKind::Tensor));
  ASSERT_TRUE(f.filter.device);
  std::vector<const Allocation*> args =
      callArguments(f.trace, f.filter, f.step(), *checkpointedCall(f.trace, f.step(), 1, 1));
  ASSERT_EQ(args.size(), 3u);
  for (const Allocation* a : args) EXPECT_EQ(a->device, 0);
  EXPECT_EQ(f.chain.held_arguments, (std::vector<Bytes>{kMask, kMask, kMask}));
  EXPECT_EQ(evaluateChain(f.chain, {{0, 1}}).peak, f.simPeak({{0, 1}}));
}

// The native caching allocator (the job's own PYTORCH_CUDA_ALLOC_CONF): only
// segments are recorded. Here the "segments" have exactly the arguments'
// sizes, the worst case: still no arguments, as segments hold many tensors.
TEST(CheckpointArguments, NoArgumentsAtSegmentLevel) {
  Fixture f(onDevice(gpt2LikeTrace(kMask + kPositions), AllocKind::Segment));
  ASSERT_TRUE(f.filter.device);
  ASSERT_EQ(f.filter.kind, AllocKind::Segment);
  EXPECT_TRUE(callArguments(f.trace, f.filter, f.step(), *checkpointedCall(f.trace, f.step(), 1, 1)).empty());
  EXPECT_EQ(f.chain.held_arguments, (std::vector<Bytes>{0, 0, 0}));
}

// Worked by hand. Region [0..1] on the plain chain recomputes at 1610
// (replay_simulator_test.cpp, WorkedChainOfThree); the hidden state and the
// position ids add 108 there. Held until layers.0's backward ends (850),
// the mask is alive during the recomputation too: 1610 + 108 + 300 = 2018.
// (The peak itself is the forward's, 1600 + 508 before the drop at the end
// of layers.1, as recorded.)
TEST(CheckpointArguments, TheSimulatorHoldsTheMaskThroughTheRecomputation) {
  constexpr Ns kBackward = 600;  // the backward's start: nothing is replayed before it
  Fixture f(gpt2LikeTrace(kMask + kPositions));
  constexpr Bytes kBefore = kEmbeddings + kMask + kPositions + kHidden;  // all alive in the forward
  EXPECT_EQ(f.simPeak({}), 1900 + kBefore);
  EXPECT_EQ(f.simPeak({{0, 1}}), 1600 + kBefore);
  EXPECT_EQ(peakFrom(f, {{0, 1}}, kBackward), 1610 + kHidden + kPositions + kMask);
  // The chain's recomputation moment carries the same bytes: model and
  // simulator agree.
  SegmentSweep sweep(f.chain, 0);
  sweep.extend();
  sweep.extend();
  EXPECT_EQ(sweep.recomputePeak(), 1610 + kHidden + kPositions + kMask);
  EXPECT_EQ(evaluateChain(f.chain, {{0, 1}}).peak, f.simPeak({{0, 1}}));
  // When the sizes do not identify the arguments, the recorded lifetimes stay.
  Fixture odd(gpt2LikeTrace(250));
  EXPECT_EQ(peakFrom(odd, {{0, 1}}, kBackward), 1610 + kHidden + kPositions);
  // Without a plan nothing is held: the recorded run is the checkpoint-free one.
  EXPECT_EQ(peakFrom(f, {}, kBackward), peakFrom(odd, {}, kBackward));
}

// The head and the loss run between the last forward and the first backward:
// the recorded run had freed the mask there (at 420), every checkpoint still
// holds it. With logits large enough to set the peak there (500..560), the
// chain's gap moment carries the mask as the simulator does (HF
// GPT-2's uniform plan at batch 16 was 1 MiB, the mask, below the simulator).
TEST(CheckpointArguments, TheLastGapCarriesTheHeldArguments) {
  Trace t = gpt2LikeTrace(kMask + kPositions);
  Allocation logits;
  logits.id = static_cast<int64_t>(t.allocations.size()) + 1;
  logits.addr = 0x900000;
  logits.bytes = 5000;
  logits.alloc = 500;
  logits.free = 560;
  logits.step = 0;
  logits.kind = static_cast<int>(AllocKind::Tensor);
  t.allocations.push_back(logits);
  std::stable_sort(t.allocations.begin(), t.allocations.end(),
                   [](const Allocation& a, const Allocation& b) { return a.alloc < b.alloc; });
  Fixture f(std::move(t));
  // The gap's peak (the logits) comes after the mask's free.
  EXPECT_EQ(f.chain.mid_after_arguments, f.chain.gap_peak[2]);
  for (const Segments& plan : {Segments{{0, 0}}, Segments{{1, 2}}, Segments{{0, 0}, {1, 1}, {2, 2}}}) {
    ChainPeak cp = evaluateChain(f.chain, plan);
    EXPECT_EQ(whereOf(f.chain, cp), "between the last forward and the first backward");
    EXPECT_EQ(cp.peak, f.simPeak(plan)) << plan.size() << " segments";
    // The mask is what the gap gains: without held arguments the chain
    // says the recorded gap less the plan's drops.
    UnitChain unheld = f.chain;
    unheld.held_arguments.assign(3, 0);
    EXPECT_EQ(cp.peak - evaluateChain(unheld, plan).peak, kMask);
  }
  EXPECT_EQ(evaluateChain(f.chain, {}).peak, f.simPeak({}));
}

}  // namespace
}  // namespace gcprof::advisor

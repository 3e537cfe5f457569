// How one quantity of a training step grows with the job's size (batch or
// sequence length), fitted on the runs recorded at a few sizes.
//
// Memory that a step allocates per sample grows linearly with the batch;
// what does not depend on it (parameters, gradients, optimizer state) is the
// constant term. Attention's score matrices grow with the square of the
// sequence length, so a quadratic term is fitted when the data supports it:
// three or more sizes whose growth a line does not follow (docs/plan.md,
// "What fits").
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace gcprof::advisor {

enum class GrowthForm { Affine, Quadratic };

std::string toString(GrowthForm f);

// What the size measures. A count (samples in a batch, tokens in a
// sequence) enters memory as itself; the side of a square image enters as
// its area: a convolution's activations are in proportion to the pixels
// (side^2), attention over patches to their square (side^4). So for a side
// every fit is over side^2: affine in the area for convolutions (exact from
// two sides), quadratic in it for attention over patches (three sides). A
// line in the side itself cuts far below at a larger side; a parabola in
// the side cannot follow side^4.
enum class SizeMeasure { Count, Side };

std::string toString(SizeMeasure m);

// The variable the fits are over: the size, or the side's square.
double fitVariable(double size, SizeMeasure m);
// Back from the fit variable to the size (messages, the fit check).
double sizeOfVariable(double variable, SizeMeasure m);

struct SizePoint {
  double size = 0;
  double value = 0;
};

// value(size) = c0 + c1 size + c2 size^2 (c2 = 0 when affine).
struct SizeFit {
  double c0 = 0, c1 = 0, c2 = 0;
  double at(double size) const { return c0 + size * (c1 + size * c2); }
};

// Least squares; exact through the points when there are as many points as
// coefficients. Needs >= 2 distinct sizes (>= 3 for Quadratic); throws
// AdviceError otherwise.
SizeFit fitGrowth(const std::vector<SizePoint>& points, GrowthForm form);

// How bytes grow, for predicting other sizes: with two sizes (or a quadratic
// form) fitGrowth; with three or more sizes and the affine form, the line
// through the two largest. Memory that is not in proportion to the size
// (fixed-size workspaces that a small batch fills differently, the warm-up
// step's allocations) bends the line at the smallest sizes; the largest
// sizes are the ones that look like the sizes asked about (on the python
// sample, a least-squares line through batch 2, 4 and 8 was 0.35% high at
// batch 32, the line through 4 and 8 exact). The smaller sizes then check
// the line (fitResidual).
SizeFit fitBytes(const std::vector<SizePoint>& points, GrowthForm form);

// How far the points are from `fit`: the largest miss, and the size there.
struct FitResidual {
  double miss = 0;   // |fit - value|, the largest over the points
  double size = 0;   // where it is
  double value = 0;  // the recorded value there
};
FitResidual fitResidual(const std::vector<SizePoint>& points, const SizeFit& fit);

// How a time (a step, a unit's forward) grows with the size, and how sure
// that is. Unlike bytes, a time recorded on a shared machine carries noise
// of its own in every run, so the fit is least squares over every recorded
// size (the bytes' line through the two largest would pass through that
// noise exactly). A step does not get faster with more data: when the fit
// falls with the size (a noisy recording at a small size, slower than one at
// a larger size), the recordings say nothing about the growth, and the time
// is the largest recorded size's in proportion to the size (a step at twice
// the batch does twice the work; the fixed part makes that a little high).
struct TimeFit {
  SizeFit fit;
  size_t sizes = 0;          // distinct recorded sizes it is from
  bool proportional = false;  // the fit fell with the size: t = t_largest * size / largest
  FitResidual residual;       // the largest miss over the recorded points
  double residualFraction() const { return residual.value > 0 ? residual.miss / residual.value : 0; }
  double at(double size) const { return std::max(0.0, fit.at(size)); }
};
TimeFit fitTime(const std::vector<SizePoint>& points, GrowthForm form);

// fitTime(points, form).at(size).
double timeAt(const std::vector<SizePoint>& points, GrowthForm form, double size);

// The form the data supports: Quadratic when >= 3 sizes are given and the
// best line misses one of them by more than `tolerance` of the largest value
// (the quadratic fit then explains them better), Affine otherwise.
GrowthForm growthFormOf(const std::vector<SizePoint>& points, double tolerance = 0.02);

}  // namespace gcprof::advisor

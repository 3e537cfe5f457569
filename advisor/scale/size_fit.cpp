#include "scale/size_fit.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "advice_error.h"

namespace gcprof::advisor {
namespace {

// Solves the normal equations (X^T X) c = X^T y by Gaussian elimination with
// partial pivoting; sizes are centred and scaled first so that squares of
// large sizes (sequence lengths in the thousands) stay well conditioned.
SizeFit leastSquares(const std::vector<SizePoint>& points, int terms) {
  double mean = 0, spread = 0;
  for (const SizePoint& p : points) mean += p.size;
  mean /= static_cast<double>(points.size());
  for (const SizePoint& p : points) spread = std::max(spread, std::fabs(p.size - mean));
  if (spread == 0) spread = 1;
  double a[3][4] = {};
  for (const SizePoint& p : points) {
    double u = (p.size - mean) / spread;
    double pw[3] = {1, u, u * u};
    for (int i = 0; i < terms; ++i) {
      for (int j = 0; j < terms; ++j) a[i][j] += pw[i] * pw[j];
      a[i][terms] += pw[i] * p.value;
    }
  }
  for (int col = 0; col < terms; ++col) {
    int pivot = col;
    for (int r = col + 1; r < terms; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    for (int j = 0; j <= terms; ++j) std::swap(a[col][j], a[pivot][j]);
    for (int r = 0; r < terms; ++r) {
      if (r == col || a[col][col] == 0) continue;
      double f = a[r][col] / a[col][col];
      for (int j = col; j <= terms; ++j) a[r][j] -= f * a[col][j];
    }
  }
  double d[3] = {};
  for (int i = 0; i < terms; ++i) d[i] = a[i][i] != 0 ? a[i][terms] / a[i][i] : 0;
  // Back from u = (x - m) / s to powers of x.
  double s = spread, m = mean;
  SizeFit f;
  f.c2 = d[2] / (s * s);
  f.c1 = d[1] / s - 2 * m * d[2] / (s * s);
  f.c0 = d[0] - m * d[1] / s + m * m * d[2] / (s * s);
  return f;
}

size_t distinctSizes(const std::vector<SizePoint>& points) {
  std::set<double> sizes;
  for (const SizePoint& p : points) sizes.insert(p.size);
  return sizes.size();
}

double worstMiss(const std::vector<SizePoint>& points, const SizeFit& f) {
  double worst = 0;
  for (const SizePoint& p : points) worst = std::max(worst, std::fabs(f.at(p.size) - p.value));
  return worst;
}

}  // namespace

std::string toString(GrowthForm f) { return f == GrowthForm::Affine ? "affine" : "quadratic"; }

std::string toString(SizeMeasure m) { return m == SizeMeasure::Count ? "count" : "side"; }

double fitVariable(double size, SizeMeasure m) { return m == SizeMeasure::Side ? size * size : size; }

double sizeOfVariable(double variable, SizeMeasure m) {
  return m == SizeMeasure::Side ? std::sqrt(variable) : variable;
}

SizeFit fitGrowth(const std::vector<SizePoint>& points, GrowthForm form) {
  size_t need = form == GrowthForm::Affine ? 2 : 3;
  if (distinctSizes(points) < need)
    throw AdviceError("a " + toString(form) + " fit needs runs at " + std::to_string(need) +
                      " or more different sizes (got " + std::to_string(distinctSizes(points)) + ")");
  return leastSquares(points, form == GrowthForm::Affine ? 2 : 3);
}

SizeFit fitBytes(const std::vector<SizePoint>& points, GrowthForm form) {
  if (form != GrowthForm::Affine || distinctSizes(points) < 3) return fitGrowth(points, form);
  // The two largest sizes (the mean of their values where a size repeats).
  std::vector<double> sizes;
  for (const SizePoint& p : points) sizes.push_back(p.size);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<SizePoint> largest;
  for (const SizePoint& p : points)
    if (p.size >= sizes[sizes.size() - 2]) largest.push_back(p);
  return fitGrowth(largest, GrowthForm::Affine);
}

FitResidual fitResidual(const std::vector<SizePoint>& points, const SizeFit& fit) {
  FitResidual r;
  for (const SizePoint& p : points) {
    double miss = std::fabs(fit.at(p.size) - p.value);
    if (miss > r.miss) r = {miss, p.size, p.value};
  }
  return r;
}

TimeFit fitTime(const std::vector<SizePoint>& points, GrowthForm form) {
  TimeFit t;
  t.sizes = distinctSizes(points);
  t.fit = fitGrowth(points, form);
  // A parabola that bends down would fall past its vertex.
  if (t.fit.c2 < 0) t.fit = fitGrowth(points, GrowthForm::Affine);
  double largest = 0;
  for (const SizePoint& p : points) largest = std::max(largest, p.size);
  // The slope at the largest recorded size: where the sizes asked about are.
  double slope = t.fit.c1 + 2 * t.fit.c2 * largest;
  if (slope < 0 && largest > 0) {
    double sum = 0, n = 0;
    for (const SizePoint& p : points)
      if (p.size == largest) sum += p.value, ++n;
    t.fit = {0, sum / n / largest, 0};
    t.proportional = true;
  }
  t.residual = fitResidual(points, t.fit);
  return t;
}

double timeAt(const std::vector<SizePoint>& points, GrowthForm form, double size) {
  return fitTime(points, form).at(size);
}

GrowthForm growthFormOf(const std::vector<SizePoint>& points, double tolerance) {
  if (distinctSizes(points) < 3) return GrowthForm::Affine;
  double largest = 0;
  for (const SizePoint& p : points) largest = std::max(largest, std::fabs(p.value));
  double line = worstMiss(points, fitGrowth(points, GrowthForm::Affine));
  double curve = worstMiss(points, fitGrowth(points, GrowthForm::Quadratic));
  return line > tolerance * largest && curve < line ? GrowthForm::Quadratic : GrowthForm::Affine;
}

}  // namespace gcprof::advisor

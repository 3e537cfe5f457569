#include "palette.h"

#include <algorithm>
#include <cmath>

namespace gcprof::view {
namespace {

Rgba fromHsv(double h, double s, double v) {
  h = std::fmod(h, 360.0);
  if (h < 0) h += 360.0;
  double c = v * s;
  double x = c * (1 - std::fabs(std::fmod(h / 60.0, 2.0) - 1));
  double m = v - c;
  double r = 0, g = 0, b = 0;
  if (h < 60) { r = c; g = x; }
  else if (h < 120) { r = x; g = c; }
  else if (h < 180) { g = c; b = x; }
  else if (h < 240) { g = x; b = c; }
  else if (h < 300) { r = x; b = c; }
  else { r = c; b = x; }
  auto to8 = [](double u) { return static_cast<uint8_t>(std::lround(std::clamp(u, 0.0, 1.0) * 255)); };
  return {to8(r + m), to8(g + m), to8(b + m), 255};
}

}  // namespace

Rgba unitColour(int index) {
  // Start at a blue so a single-unit trace does not look like an error.
  constexpr double kGoldenAngle = 137.50776;
  double hue = 200.0 + kGoldenAngle * index;
  // Alternate value a little so hues that land close still separate.
  double value = (index % 2 == 0) ? 0.92 : 0.80;
  return fromHsv(hue, 0.62, value);
}

Rgba backwardShade(Rgba c) {
  return {static_cast<uint8_t>(c.r * 0.62), static_cast<uint8_t>(c.g * 0.62),
          static_cast<uint8_t>(c.b * 0.62), c.a};
}

Rgba highlight(Rgba c) {
  auto up = [](uint8_t u) { return static_cast<uint8_t>(u + (255 - u) / 2); };
  return {up(c.r), up(c.g), up(c.b), c.a};
}

}  // namespace gcprof::view

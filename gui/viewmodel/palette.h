// Colour assignment shared by every view of a trace (GUI, screenshots, the
// HTML chart): a unit keeps its colour in the memory area, its range lanes and
// the tables, and the same trace always gets the same colours so screenshots
// can be checked pixel by pixel.
#pragma once

#include <cstdint>

namespace gcprof::view {

// 8-bit RGBA, opaque unless said otherwise.
struct Rgba {
  uint8_t r = 0, g = 0, b = 0, a = 255;
  bool operator==(const Rgba& o) const { return r == o.r && g == o.g && b == o.b && a == o.a; }
  // Packed the way Dear ImGui's IM_COL32 packs (A in the high byte, R low).
  uint32_t packed() const {
    return uint32_t(r) | (uint32_t(g) << 8) | (uint32_t(b) << 16) | (uint32_t(a) << 24);
  }
};

namespace palette {
// Fixed series colours; chosen to stay distinct from every unit hue below.
constexpr Rgba kPersistent{92, 107, 130};   // slate: params, grads, optimizer state
constexpr Rgba kOther{168, 168, 160};       // warm grey: workspaces, backward temporaries
constexpr Rgba kBudget{235, 64, 52};        // red: the plan's memory budget
constexpr Rgba kPredicted{255, 215, 0};     // gold: the plan's simulated curve
constexpr Rgba kVerified{0, 230, 118};      // green: what the verification run measured
constexpr Rgba kStepBoundary{255, 255, 255, 70};
constexpr Rgba kStepLane{70, 82, 99};
constexpr Rgba kFolded{120, 120, 120};
}  // namespace palette

// Colour of unit `index` (forward order). Hues step by the golden angle so
// neighbouring layers never look alike; saturation and value are fixed so the
// hues stay readable on the dark background.
Rgba unitColour(int index);
// The same hue darkened, for backward ranges of the unit.
Rgba backwardShade(Rgba forward);
// Brighter variant for highlighted items.
Rgba highlight(Rgba c);

}  // namespace gcprof::view

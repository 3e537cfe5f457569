// Look of the GUI: a dark theme close to Tracy's, a readable font, and the
// bridge from the view model's colours to ImGui's.
#pragma once

#include <imgui.h>

#include "palette.h"

namespace gcprof::gui {

inline ImU32 col(view::Rgba c) { return c.packed(); }
inline ImU32 col(view::Rgba c, uint8_t alpha) {
  c.a = alpha;
  return c.packed();
}

// Style and fonts for the current ImGui context (call before the first frame).
// Uses DejaVu Sans when installed, ImGui's built-in font otherwise.
void applyTheme(float font_px = 15.0f);

}  // namespace gcprof::gui

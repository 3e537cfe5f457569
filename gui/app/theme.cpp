#include "theme.h"

#include <unistd.h>

namespace gcprof::gui {

void applyTheme(float font_px) {
  ImGui::StyleColorsDark();
  ImGuiStyle& s = ImGui::GetStyle();
  s.WindowRounding = 0;
  s.FrameRounding = 3;
  s.GrabRounding = 3;
  s.ItemSpacing = ImVec2(8, 5);
  s.CellPadding = ImVec2(6, 2);
  s.Colors[ImGuiCol_WindowBg] = ImVec4(0.11f, 0.12f, 0.14f, 1.0f);
  s.Colors[ImGuiCol_ChildBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.0f);
  s.Colors[ImGuiCol_TableRowBgAlt] = ImVec4(1, 1, 1, 0.03f);

  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // no imgui.ini next to whatever trace was opened
  // Debian's fonts-dejavu-core; any missing font falls back to ImGui's own.
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  if (access(font, R_OK) == 0 && io.Fonts->AddFontFromFileTTF(font, font_px)) return;
  io.Fonts->AddFontDefault();
}

}  // namespace gcprof::gui

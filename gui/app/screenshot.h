// Headless rendering for docs and tests: draw the app into an offscreen
// framebuffer of exactly the requested size (independent of the X screen's
// size), read it back and write a PNG.
#pragma once

#include <string>

namespace gcprof::gui {

class GuiApp;
class Window;

// Renders `frames` frames (layout settles after two) and writes `png`.
// False with `error` set on any GL or file failure.
bool writeScreenshot(Window& window, GuiApp& app, int width, int height, int frames,
                     const std::string& png, std::string* error);

}  // namespace gcprof::gui

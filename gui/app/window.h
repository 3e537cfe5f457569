// The GLFW window with an OpenGL 3 context and the ImGui back ends bound to
// it. Visible for interactive use; hidden for screenshots, which render into
// an offscreen framebuffer instead (see screenshot.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

struct GLFWwindow;

namespace gcprof::gui {

class GuiApp;

class Window {
 public:
  // nullptr with `error` set when there is no display or no OpenGL 3.
  static std::unique_ptr<Window> create(int width, int height, bool visible, std::string* error);
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  // Interactive loop until the window is closed; dropped files open in `app`.
  void run(GuiApp& app);
  // ImGui back-end frame start: after it, ImGui::NewFrame() may be called.
  void newFrame();
  GLFWwindow* handle() { return window_; }

 private:
  Window() = default;
  GLFWwindow* window_ = nullptr;
  std::vector<std::string> dropped_;
};

}  // namespace gcprof::gui

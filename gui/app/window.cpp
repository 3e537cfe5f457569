#include "window.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <cstdio>

#include "gui_app.h"
#include "theme.h"

namespace gcprof::gui {
namespace {

std::string g_glfw_error;  // GLFW reports errors through a C callback

void onGlfwError(int code, const char* what) {
  g_glfw_error = "GLFW error " + std::to_string(code) + ": " + (what ? what : "?");
}

}  // namespace

std::unique_ptr<Window> Window::create(int width, int height, bool visible, std::string* error) {
  glfwSetErrorCallback(onGlfwError);
  if (!glfwInit()) {
    *error = "cannot start GLFW (" + g_glfw_error +
             "); is there a display? For headless use run under xvfb-run -a";
    return nullptr;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
  std::unique_ptr<Window> w(new Window());
  w->window_ = glfwCreateWindow(width, height, "gcprof-gui", nullptr, nullptr);
  if (!w->window_) {
    *error = "cannot create an OpenGL 3 window (" + g_glfw_error + ")";
    glfwTerminate();
    return nullptr;
  }
  glfwMakeContextCurrent(w->window_);
  glfwSwapInterval(1);
  glfwSetWindowUserPointer(w->window_, w.get());
  glfwSetDropCallback(w->window_, [](GLFWwindow* gw, int count, const char** paths) {
    auto* self = static_cast<Window*>(glfwGetWindowUserPointer(gw));
    for (int i = 0; i < count; ++i) self->dropped_.emplace_back(paths[i]);
  });
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  applyTheme();
  ImGui_ImplGlfw_InitForOpenGL(w->window_, true);
  ImGui_ImplOpenGL3_Init("#version 130");
  return w;
}

Window::~Window() {
  if (!window_) return;
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window_);
  glfwTerminate();
}

void Window::newFrame() {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
}

void Window::run(GuiApp& app) {
  while (!glfwWindowShouldClose(window_)) {
    // Sleep until something happens; redraw at most a few times a second idle.
    glfwWaitEventsTimeout(0.25);
    for (const std::string& path : dropped_) app.openInBackground(path, 0, -1, -1);
    dropped_.clear();
    newFrame();
    ImGui::NewFrame();
    app.frame();
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window_, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.11f, 0.12f, 0.14f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glfwSwapBuffers(window_);
  }
}

}  // namespace gcprof::gui

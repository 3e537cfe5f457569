#include "screenshot.h"

#define GL_GLEXT_PROTOTYPES 0
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <cfloat>
#include <vector>

#include "gui_app.h"
#include "report/output_file.h"
#include "window.h"

namespace gcprof::gui {
namespace {

// Framebuffer objects are GL 3.0 core; fetched through GLFW rather than
// assuming libGL exports them.
struct FboApi {
  PFNGLGENFRAMEBUFFERSPROC genFramebuffers = nullptr;
  PFNGLBINDFRAMEBUFFERPROC bindFramebuffer = nullptr;
  PFNGLDELETEFRAMEBUFFERSPROC deleteFramebuffers = nullptr;
  PFNGLGENRENDERBUFFERSPROC genRenderbuffers = nullptr;
  PFNGLBINDRENDERBUFFERPROC bindRenderbuffer = nullptr;
  PFNGLDELETERENDERBUFFERSPROC deleteRenderbuffers = nullptr;
  PFNGLRENDERBUFFERSTORAGEPROC renderbufferStorage = nullptr;
  PFNGLFRAMEBUFFERRENDERBUFFERPROC framebufferRenderbuffer = nullptr;
  PFNGLCHECKFRAMEBUFFERSTATUSPROC checkFramebufferStatus = nullptr;

  bool load() {
    auto get = [](const char* name) { return glfwGetProcAddress(name); };
    genFramebuffers = reinterpret_cast<PFNGLGENFRAMEBUFFERSPROC>(get("glGenFramebuffers"));
    bindFramebuffer = reinterpret_cast<PFNGLBINDFRAMEBUFFERPROC>(get("glBindFramebuffer"));
    deleteFramebuffers = reinterpret_cast<PFNGLDELETEFRAMEBUFFERSPROC>(get("glDeleteFramebuffers"));
    genRenderbuffers = reinterpret_cast<PFNGLGENRENDERBUFFERSPROC>(get("glGenRenderbuffers"));
    bindRenderbuffer = reinterpret_cast<PFNGLBINDRENDERBUFFERPROC>(get("glBindRenderbuffer"));
    deleteRenderbuffers = reinterpret_cast<PFNGLDELETERENDERBUFFERSPROC>(get("glDeleteRenderbuffers"));
    renderbufferStorage = reinterpret_cast<PFNGLRENDERBUFFERSTORAGEPROC>(get("glRenderbufferStorage"));
    framebufferRenderbuffer =
        reinterpret_cast<PFNGLFRAMEBUFFERRENDERBUFFERPROC>(get("glFramebufferRenderbuffer"));
    checkFramebufferStatus =
        reinterpret_cast<PFNGLCHECKFRAMEBUFFERSTATUSPROC>(get("glCheckFramebufferStatus"));
    return genFramebuffers && bindFramebuffer && deleteFramebuffers && genRenderbuffers &&
           bindRenderbuffer && deleteRenderbuffers && renderbufferStorage &&
           framebufferRenderbuffer && checkFramebufferStatus;
  }
};

}  // namespace

bool writeScreenshot(Window& window, GuiApp& app, int width, int height, int frames,
                     const std::string& png, std::string* error) {
  FboApi gl;
  if (!gl.load()) {
    *error = "OpenGL framebuffer objects are not available (need OpenGL 3.0)";
    return false;
  }
  GLint max_size = 0;
  glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &max_size);
  if (width > max_size || height > max_size) {
    *error = "size " + std::to_string(width) + "x" + std::to_string(height) +
             " is larger than this OpenGL allows (" + std::to_string(max_size) + ")";
    return false;
  }
  GLuint fbo = 0, colour = 0;
  gl.genFramebuffers(1, &fbo);
  gl.bindFramebuffer(GL_FRAMEBUFFER, fbo);
  gl.genRenderbuffers(1, &colour);
  gl.bindRenderbuffer(GL_RENDERBUFFER, colour);
  gl.renderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  gl.framebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, colour);
  bool ok = gl.checkFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  if (!ok) *error = "cannot create an offscreen framebuffer of that size";

  std::vector<unsigned char> pixels;
  if (ok) {
    ImGuiIO& io = ImGui::GetIO();
    for (int f = 0; f < std::max(frames, 1); ++f) {
      window.newFrame();
      // The offscreen target, not the (hidden) window, sets the size; no
      // mouse, so no hover effects in pictures.
      io.DisplaySize = ImVec2(static_cast<float>(width), static_cast<float>(height));
      io.DisplayFramebufferScale = ImVec2(1, 1);
      io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
      ImGui::NewFrame();
      app.frame();
      ImGui::Render();
      glViewport(0, 0, width, height);
      glClearColor(0.11f, 0.12f, 0.14f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    }
    glFinish();
    pixels.resize(static_cast<size_t>(width) * height * 4);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    if (glGetError() != GL_NO_ERROR) {
      ok = false;
      *error = "reading the framebuffer back failed";
    }
  }
  gl.bindFramebuffer(GL_FRAMEBUFFER, 0);
  gl.deleteRenderbuffers(1, &colour);
  gl.deleteFramebuffers(1, &fbo);
  if (!ok) return false;
  // GL rows run bottom-up; PNG rows top-down. Alpha is forced opaque.
  const size_t stride = static_cast<size_t>(width) * 4;
  for (size_t i = 3; i < pixels.size(); i += 4) pixels[i] = 255;
  stbi_flip_vertically_on_write(1);
  std::string encoded;
  auto append = [](void* to, void* data, int size) {
    static_cast<std::string*>(to)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &encoded, width, height, 4, pixels.data(), static_cast<int>(stride))) {
    *error = png + ": cannot encode the PNG";
    return false;
  }
  try {
    advisor::writeOutputFile(png, encoded);
  } catch (const advisor::OutputFileError& e) {
    *error = std::string(e.what()) + "; no screenshot written";
    return false;
  }
  return true;
}

}  // namespace gcprof::gui

// The whole window of gcprof-gui, drawn with Dear ImGui and nothing else (no
// window system), so that the app, the screenshot mode and the frame
// benchmark all run the same code: toolbar (run, plan and verification
// pickers, fit buttons), legend, timeline, tables.
#pragma once

#include <memory>
#include <string>

#include "tables_view.h"
#include "timeline_view.h"
#include "trace_document.h"

namespace gcprof::gui {

class GuiApp {
 public:
  GuiApp() = default;
  explicit GuiApp(std::unique_ptr<view::TraceDocument> doc);

  // Opens another trace (a file dropped on the window). On failure the
  // current trace stays and the error is shown.
  bool open(const std::string& path);
  void setError(std::string message) { error_ = std::move(message); }
  const std::string& error() const { return error_; }

  // One frame: call between ImGui::NewFrame() and ImGui::Render().
  void frame();

  // Fits the timeline to step `index` (position in the run's steps) and
  // makes it the toolbar's current step.
  void fitStep(size_t index);

  // Opens the What fits tab, computed at `budget_percent` of the largest
  // sized run. False with `error` when the file has no sized runs.
  bool showWhatFits(int budget_percent, std::string* error);

  view::TraceDocument* document() { return doc_.get(); }
  TimelineView& timeline() { return timeline_; }

 private:
  void toolbar();
  void summary();
  void legend();
  void runChanged();

  std::unique_ptr<view::TraceDocument> doc_;
  TimelineView timeline_;
  TablesView tables_;
  std::string error_;
  size_t step_ = 0;  // the step "fit step" shows
  bool select_what_fits_ = false;  // bring the What fits tab forward next frame
};

}  // namespace gcprof::gui

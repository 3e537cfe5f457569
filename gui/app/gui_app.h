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
#include "trace_opening.h"

namespace gcprof::gui {

class GuiApp {
 public:
  GuiApp() = default;
  explicit GuiApp(std::unique_ptr<view::TraceDocument> doc);

  // Opens another trace (a file dropped on the window). On failure the
  // current trace stays and the error is shown.
  bool open(const std::string& path);
  // Opens `path` on a worker thread (run 0: the default run); frames show the
  // progress meanwhile. Then selects plan `plan` (-1: the default, 0: none)
  // and fits step `step` (its recorded index; -1: none); a plan or step the
  // run lacks is reported as an error, like a file that cannot be opened.
  void openInBackground(const std::string& path, int64_t run, int64_t plan, int64_t step);
  bool opening() const { return opening_ != nullptr; }
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
  void finishOpening();

  std::unique_ptr<view::TraceDocument> doc_;
  TimelineView timeline_;
  TablesView tables_;
  std::string error_;
  size_t step_ = 0;  // the step "fit step" shows
  bool select_what_fits_ = false;  // bring the What fits tab forward next frame
  std::unique_ptr<view::TraceOpening> opening_;
  int64_t opening_plan_ = -1, opening_step_ = -1;
};

}  // namespace gcprof::gui

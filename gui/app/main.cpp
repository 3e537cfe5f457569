// gcprof-gui: the desktop timeline of a trace.
//
//   gcprof-gui trace.db
//   gcprof-gui trace.db --screenshot timeline.png --size 1600x900   # headless
//
// Exit codes in screenshot mode: 0 written, 2 the file is not a readable
// trace, 3 no display/OpenGL or the PNG could not be written.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <string>

#include "gui_app.h"
#include "screenshot.h"
#include "start_choice.h"
#include "trace_document.h"
#include "window.h"

namespace {

bool parseSize(const std::string& s, int* w, int* h) {
  int x = 0, y = 0;
  char extra = 0;
  if (std::sscanf(s.c_str(), "%dx%d%c", &x, &y, &extra) != 2) return false;
  if (x < 320 || y < 200 || x > 16384 || y > 16384) return false;
  *w = x;
  *h = y;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"gcprof-gui: memory timeline of a gcprof trace"};
  std::string trace, screenshot, size = "1600x900";
  int64_t run = 0, plan = -1;
  int frames = 3;
  int what_fits = 0;
  int64_t step = -1;
  cli.add_option("trace", trace, "trace file written by `gcprof record`");
  cli.add_option("--run", run, "run to show (default: the newest baseline run)");
  cli.add_option("--plan", plan, "plan to overlay (default: the plan of the run's newest verification, as gcprof report shows, else its newest plan; 0 = none)");
  cli.add_option("--step", step, "start fitted to this step (index as recorded)");
  cli.add_option("--screenshot", screenshot, "render headlessly to this PNG and exit");
  cli.add_option("--size", size, "screenshot size, WIDTHxHEIGHT")->capture_default_str();
  cli.add_option("--frames", frames, "frames rendered before the screenshot (1 to 1000)")->capture_default_str();
  cli.add_option("--what-fits", what_fits,
                 "open on the What fits tab, computed at this budget (percent of the largest sized run)");
  CLI11_PARSE(cli, argc, argv);
  gcprof::view::StartChoice choice;
  choice.run = run;
  if (cli.count("--plan")) choice.plan = plan;
  if (cli.count("--step")) choice.step = step;
  choice.frames = frames;
  if (std::string bad = gcprof::view::checkStartNumbers(choice); !bad.empty()) {
    std::fprintf(stderr, "gcprof-gui: %s\n", bad.c_str());
    return 2;
  }
  if (what_fits < 0 || (cli.count("--what-fits") && what_fits == 0)) {
    std::fprintf(stderr, "gcprof-gui: --what-fits %d: give a budget above 0 (percent of the largest sized run)\n",
                 what_fits);
    return 2;
  }

  int width = 0, height = 0;
  if (!parseSize(size, &width, &height)) {
    std::fprintf(stderr, "gcprof-gui: --size %s: expected WIDTHxHEIGHT, e.g. 1600x900 (320x200 at least)\n",
                 size.c_str());
    return 2;
  }
  const bool headless = !screenshot.empty();
  if (headless && trace.empty()) {
    std::fprintf(stderr, "gcprof-gui: --screenshot needs a trace file\n");
    return 2;
  }

  // A plan or step the file lacks is refused before a window opens, in
  // both modes, naming what the file has.
  if (!trace.empty()) {
    if (std::string bad = gcprof::view::checkStartChoice(trace, choice); !bad.empty()) {
      std::fprintf(stderr, "gcprof-gui: %s\n", bad.c_str());
      return 2;
    }
  }

  std::unique_ptr<gcprof::view::TraceDocument> doc;
  std::string error;
  if (!headless) {
    // Interactive: the window opens at once and the trace is read on a
    // worker thread, with its progress drawn (a big run takes seconds).
    auto window = gcprof::gui::Window::create(width, height, true, &error);
    if (!window) {
      std::fprintf(stderr, "gcprof-gui: %s\n", error.c_str());
      return 3;
    }
    gcprof::gui::GuiApp app;
    if (!trace.empty())
      app.openInBackground(trace, run, choice.plan.value_or(-1), choice.step.value_or(-1));
    window->run(app);
    return 0;
  }
  if (!trace.empty()) {
    doc = gcprof::view::TraceDocument::open(trace, run, &error);
    if (!doc) {
      std::fprintf(stderr, "gcprof-gui: %s\n", error.c_str());
      if (headless) return 2;  // interactive: the window shows the error too
    } else if (choice.plan) {
      doc->selectPlan(*choice.plan);  // known to be the run's (checkStartChoice)
    }
  }

  // Headless, the offscreen framebuffer has the picture's size; the hidden
  // window only carries the GL context, so it stays small enough for any X screen.
  auto window = headless ? gcprof::gui::Window::create(640, 480, false, &error)
                         : gcprof::gui::Window::create(width, height, true, &error);
  if (!window) {
    std::fprintf(stderr, "gcprof-gui: %s\n", error.c_str());
    return 3;
  }
  gcprof::gui::GuiApp app(std::move(doc));
  if (!error.empty() && !app.document()) app.setError(error);
  if (app.document() && choice.step) {
    const auto& steps = app.document()->run().trace.steps;
    auto it = std::find_if(steps.begin(), steps.end(), [&](const gcprof::Step& s) { return s.index == *choice.step; });
    if (it != steps.end()) app.fitStep(static_cast<size_t>(it - steps.begin()));
  }

  if (app.document() && what_fits > 0 && !app.showWhatFits(what_fits, &error)) {
    std::fprintf(stderr, "gcprof-gui: --what-fits %d: %s\n", what_fits, error.c_str());
    return 2;
  }

  if (!headless) {
    window->run(app);
    return 0;
  }
  // Pictures show where memory peaks: the cursor (and the live table) there.
  const gcprof::view::RunView& shown = app.document()->run();
  if (!shown.memory.empty()) app.timeline().setCursor(shown.memory.peakTime());
  if (!gcprof::gui::writeScreenshot(*window, app, width, height, frames, screenshot, &error)) {
    std::fprintf(stderr, "gcprof-gui: %s\n", error.c_str());
    return 3;
  }
  ImVec4 r = app.timeline().memoryRect();
  std::printf("gcprof-gui: wrote %s (%dx%d); memory area x=%d y=%d w=%d h=%d\n", screenshot.c_str(),
              width, height, static_cast<int>(r.x), static_cast<int>(r.y), static_cast<int>(r.z),
              static_cast<int>(r.w));
  return 0;
}

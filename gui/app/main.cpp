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
#include <memory>
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

// The command line's words, and what they come to once checked.
struct GuiOptions {
  std::string trace, screenshot, size = "1600x900";
  int64_t run = 0, plan = -1, step = -1;
  int frames = 3, what_fits = 0;
  int width = 0, height = 0;  // from `size`
  gcprof::view::StartChoice choice;
};

int failWith(int code, const std::string& message) {
  std::fprintf(stderr, "gcprof-gui: %s\n", message.c_str());
  return code;
}

// "" when the options can be followed; else what is wrong with them. A plan
// or step the file lacks is refused before a window opens, in both modes,
// naming what the file has.
std::string refusedOptions(GuiOptions& o, bool what_fits_given) {
  if (std::string bad = gcprof::view::checkStartNumbers(o.choice); !bad.empty()) return bad;
  if (o.what_fits < 0 || (what_fits_given && o.what_fits == 0))
    return "--what-fits " + std::to_string(o.what_fits) +
           ": give a budget above 0 (percent of the largest sized run)";
  if (!parseSize(o.size, &o.width, &o.height))
    return "--size " + o.size + ": expected WIDTHxHEIGHT, e.g. 1600x900 (320x200 at least)";
  if (!o.screenshot.empty() && o.trace.empty()) return "--screenshot needs a trace file";
  if (!o.trace.empty()) return gcprof::view::checkStartChoice(o.trace, o.choice);
  return "";
}

// The window opens at once and the trace is read on a worker thread, with
// its progress drawn (a big run takes seconds).
int runInteractive(const GuiOptions& o) {
  std::string error;
  auto window = gcprof::gui::Window::create(o.width, o.height, true, &error);
  if (!window) return failWith(3, error);
  gcprof::gui::GuiApp app;
  if (!o.trace.empty())
    app.openInBackground(o.trace, o.run, o.choice.plan.value_or(-1), o.choice.step.value_or(-1));
  window->run(app);
  return 0;
}

// Headless: the trace as the window would first show it, with the cursor
// where memory peaks (pictures show the peak and its live table).
int renderScreenshot(const GuiOptions& o) {
  std::string error;
  std::unique_ptr<gcprof::view::TraceDocument> doc = gcprof::view::TraceDocument::open(o.trace, o.run, &error);
  if (!doc) return failWith(2, error);
  if (o.choice.plan) doc->selectPlan(*o.choice.plan);  // known to be the run's (checkStartChoice)
  // The offscreen framebuffer has the picture's size; the hidden window only
  // carries the GL context, so it stays small enough for any X screen.
  auto window = gcprof::gui::Window::create(640, 480, false, &error);
  if (!window) return failWith(3, error);
  gcprof::gui::GuiApp app(std::move(doc));
  if (o.choice.step) {
    const auto& steps = app.document()->run().trace.steps;
    auto it = std::find_if(steps.begin(), steps.end(), [&](const gcprof::Step& s) { return s.index == *o.choice.step; });
    if (it != steps.end()) app.fitStep(static_cast<size_t>(it - steps.begin()));
  }
  if (o.what_fits > 0 && !app.showWhatFits(o.what_fits, &error))
    return failWith(2, "--what-fits " + std::to_string(o.what_fits) + ": " + error);
  const gcprof::view::RunView& shown = app.document()->run();
  if (!shown.memory.empty()) app.timeline().setCursor(shown.memory.peakTime());
  if (!gcprof::gui::writeScreenshot(*window, app, o.width, o.height, o.frames, o.screenshot, &error))
    return failWith(3, error);
  ImVec4 r = app.timeline().memoryRect();
  std::printf("gcprof-gui: wrote %s (%dx%d); memory area x=%d y=%d w=%d h=%d\n", o.screenshot.c_str(),
              o.width, o.height, static_cast<int>(r.x), static_cast<int>(r.y), static_cast<int>(r.z),
              static_cast<int>(r.w));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"gcprof-gui: memory timeline of a gcprof trace"};
  GuiOptions o;
  cli.add_option("trace", o.trace, "trace file written by `gcprof record`");
  cli.add_option("--run", o.run, "run to show (default: the newest baseline run)");
  cli.add_option("--plan", o.plan, "plan to overlay (default: the plan of the run's newest verification, as gcprof report shows, else its newest plan; 0 = none)");
  cli.add_option("--step", o.step, "start fitted to this step (index as recorded)");
  cli.add_option("--screenshot", o.screenshot, "render headlessly to this PNG and exit");
  cli.add_option("--size", o.size, "screenshot size, WIDTHxHEIGHT")->capture_default_str();
  cli.add_option("--frames", o.frames, "frames rendered before the screenshot (1 to 1000)")->capture_default_str();
  cli.add_option("--what-fits", o.what_fits,
                 "open on the What fits tab, computed at this budget (percent of the largest sized run)");
  CLI11_PARSE(cli, argc, argv);
  o.choice.run = o.run;
  if (cli.count("--plan")) o.choice.plan = o.plan;
  if (cli.count("--step")) o.choice.step = o.step;
  o.choice.frames = o.frames;
  if (std::string bad = refusedOptions(o, cli.count("--what-fits") > 0); !bad.empty()) return failWith(2, bad);
  return o.screenshot.empty() ? runInteractive(o) : renderScreenshot(o);
}

// The timeline's mouse handling, driven through a headless ImGui context with
// fabricated input: wheel zoom keeps the time under the mouse, dragging pans,
// a click places the cursor and highlights the unit under it, double-clicking
// a step fits the view to it.
#include <gtest/gtest.h>
#include <imgui.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "fabricated_training.h"
#include "gui_app.h"
#include "theme.h"
#include "trace_document.h"

namespace gcprof::gui {
namespace {

class Interaction : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    applyTheme();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1400, 800);
    io.DeltaTime = 1.0f / 60;
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
    unsigned char* px = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&px, &w, &h);
    trace_ = testing::fabricateTraining(testing::TrainingShape{});
    app_ = std::make_unique<GuiApp>(view::TraceDocument::fromTrace(trace_, "fabricated"));
    frame(ImVec2(-1, -1), false);
    frame(ImVec2(-1, -1), false);
    ImVec4 r = app_->timeline().memoryRect();
    area_ = {r.x, r.y, r.z, r.w};
  }
  void TearDown() override {
    app_.reset();
    ImGui::DestroyContext();
  }
  void frame(ImVec2 mouse, bool down, float wheel = 0) {
    ImGuiIO& io = ImGui::GetIO();
    io.MousePos = mouse;
    io.MouseDown[0] = down;
    io.MouseWheel = wheel;
    ImGui::NewFrame();
    app_->frame();
    ImGui::Render();
  }
  void click(ImVec2 at) {
    frame(at, false);
    frame(at, true);
    frame(at, false);
  }
  double timeAt(float x) const { return app_->timeline().window().toTime(x - area_.x, area_.z); }
  // Screen y of the middle of unit `u`'s band at time t.
  float unitBandY(Ns t, int u) const {
    const view::RunView& run = app_->document()->run();
    std::vector<Bytes> s;
    run.memory.seriesAt(t, s);
    double below = static_cast<double>(s[view::kSeriesPersistent]);
    for (int k = 0; k < u; ++k) below += static_cast<double>(s[view::kFirstUnitSeries + k]);
    double mid = below + static_cast<double>(s[view::kFirstUnitSeries + u]) / 2;
    return area_.y + area_.w - static_cast<float>(mid / app_->timeline().bytesAtTop()) * area_.w;
  }

  Trace trace_;
  std::unique_ptr<GuiApp> app_;
  ImVec4 area_;
};

TEST_F(Interaction, WheelZoomsAroundTheMouse) {
  ImVec2 at(area_.x + area_.z * 0.3f, area_.y + area_.w * 0.5f);
  frame(at, false);
  double before_w = app_->timeline().window().width();
  double t_before = timeAt(at.x);
  frame(at, false, 2.0f);
  EXPECT_NEAR(app_->timeline().window().width(), before_w * 0.64, before_w * 0.01);
  EXPECT_NEAR(timeAt(at.x), t_before, before_w * 1e-3);
  frame(at, false, -4.0f);  // back out: never wider than the run plus a margin
  EXPECT_LE(app_->timeline().window().width(), before_w * 1.2);
}

TEST_F(Interaction, DragPansTheWindow) {
  ImVec2 at(area_.x + area_.z * 0.5f, area_.y + area_.w * 0.5f);
  frame(at, false, 3.0f);  // zoom in first so there is room to pan
  double t0 = app_->timeline().window().t0;
  double per_px = app_->timeline().window().width() / area_.z;
  frame(at, true);
  for (int i = 1; i <= 10; ++i) frame(ImVec2(at.x + 10.0f * i, at.y), true);
  frame(ImVec2(at.x + 100, at.y), false);
  EXPECT_NEAR(app_->timeline().window().t0, t0 - 100 * per_px, 12 * per_px);
  EXPECT_LT(app_->timeline().cursor(), 0) << "a drag must not place the cursor";
}

TEST_F(Interaction, ClickPlacesTheCursorAndHighlightsTheUnitUnderIt) {
  // The end of step 1's forward: every unit's activations are stacked.
  Ns t = 0;
  for (const Range& r : trace_.ranges)
    if (r.step == 1 && r.name == "layers.7" && r.phase == Phase::Forward) t = r.end - 200;
  const view::TimeWindow& w = app_->timeline().window();
  float x = area_.x + static_cast<float>(w.toX(static_cast<double>(t), area_.z));
  click(ImVec2(x, unitBandY(t, 3)));
  EXPECT_EQ(app_->timeline().selectedUnit(), 3);
  EXPECT_NEAR(static_cast<double>(app_->timeline().cursor()), static_cast<double>(t), w.width() / area_.z * 2);
  click(ImVec2(x, area_.y + area_.w - 3));  // persistent memory: no unit
  EXPECT_EQ(app_->timeline().selectedUnit(), -1);
}

TEST_F(Interaction, DoubleClickOnAStepFitsIt) {
  const Step& s = trace_.steps[1];
  const view::TimeWindow& w = app_->timeline().window();
  float x = area_.x + static_cast<float>(w.toX(static_cast<double>(s.start + s.end) / 2, area_.z));
  // The steps lane is the first lane under the axis.
  ImVec2 at(x, area_.y + area_.w + timeline_layout::kAxisH + 4 + timeline_layout::kLaneH / 2);
  click(at);
  frame(at, true);
  frame(at, false);
  EXPECT_NEAR(app_->timeline().window().t0, static_cast<double>(s.start), (s.end - s.start) * 0.05);
  EXPECT_NEAR(app_->timeline().window().t1, static_cast<double>(s.end), (s.end - s.start) * 0.05);
}

}  // namespace
}  // namespace gcprof::gui

namespace gcprof::gui {
namespace {

TEST_F(Interaction, HoverTooltipsOverMemoryAndLanes) {
  for (float fy : {0.5f, 0.95f}) frame(ImVec2(area_.x + area_.z * 0.6f, area_.y + area_.w * fy), false);
  for (int lane = 0; lane < 3; ++lane)
    frame(ImVec2(area_.x + area_.z * 0.6f,
                 area_.y + area_.w + timeline_layout::kAxisH + 4 + timeline_layout::kLaneH * (lane + 0.5f)),
          false);
  EXPECT_GT(ImGui::GetDrawData()->TotalVtxCount, 0);
}

// A file dropped on the window that is not a trace: the open trace stays,
// the window says why.
TEST_F(Interaction, DroppingAForeignFileKeepsTheTrace) {
  EXPECT_FALSE(app_->open("/nonexistent/dropped.db"));
  EXPECT_NE(app_->error().find("/nonexistent/dropped.db"), std::string::npos) << app_->error();
  ASSERT_NE(app_->document(), nullptr);
  EXPECT_EQ(app_->document()->path(), "fabricated");
  frame(ImVec2(-1, -1), false);
}

// Opening in the background: frames keep coming while the trace is read
// (the window stays responsive), then the document is there.
TEST_F(Interaction, OpeningInTheBackgroundKeepsDrawing) {
  std::string path = ::testing::TempDir() + "gcprof-gui-background-" + std::to_string(getpid()) + ".db";
  std::remove(path.c_str());
  testing::writeRun(path, trace_);
  app_->openInBackground(path, 0, 0, 1);
  int frames = 0;
  while (app_->opening() && frames < 100000) {
    frame(ImVec2(-1, -1), false);
    ++frames;
  }
  EXPECT_FALSE(app_->opening());
  ASSERT_NE(app_->document(), nullptr);
  EXPECT_EQ(app_->document()->path(), path);
  EXPECT_TRUE(app_->error().empty()) << app_->error();
  frame(ImVec2(-1, -1), false);
  // A step the run lacks is said, not ignored.
  app_->openInBackground(path, 0, -1, 99);
  while (app_->opening()) frame(ImVec2(-1, -1), false);
  EXPECT_NE(app_->error().find("--step 99"), std::string::npos) << app_->error();
  std::remove(path.c_str());
}

// Runs with nothing in them (a job that crashed at once) still draw.
TEST(EmptyRun, DrawsWithoutData) {
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(800, 600);
  io.DeltaTime = 1.0f / 60;
  unsigned char* px = nullptr;
  int w = 0, h = 0;
  io.IniFilename = nullptr;  // no imgui.ini left in the working directory
  io.Fonts->GetTexDataAsRGBA32(&px, &w, &h);
  {
    Trace empty;
    empty.run.id = 1;
    GuiApp app(view::TraceDocument::fromTrace(empty, "empty"));
    for (int i = 0; i < 3; ++i) {
      io.MousePos = ImVec2(400, 200);
      ImGui::NewFrame();
      app.frame();
      ImGui::Render();
    }
    EXPECT_EQ(app.document()->run().memory.peak(), 0);
    GuiApp none;  // no trace at all: the drop-a-file screen
    ImGui::NewFrame();
    none.frame();
    ImGui::Render();
  }
  ImGui::DestroyContext();
}

}  // namespace
}  // namespace gcprof::gui

namespace gcprof::gui {
namespace {

// Values a damaged or hostile trace can hold: parent cycles, unknown phases,
// negative depths, frees before allocations, ranges ending before they start,
// allocations pointing at ranges that do not exist. Everything still draws.
TEST(AdversarialRun, DrawsWithoutCrashing) {
  Trace t;
  t.run.id = 1;
  for (int i = 1; i <= 50; ++i) {
    Range r;
    r.id = i;
    r.name = i % 3 ? "layers." + std::to_string(i % 4) : "";
    r.domain = static_cast<RangeDomain>(i % 5);
    r.phase = static_cast<Phase>(i % 4);
    r.depth = (i % 7) - 3;
    r.parent = (i % 10) + 1;  // cycles
    r.start = 1000 * i;
    r.end = (i % 6 == 0) ? r.start - 500 : r.start + 700 * (i % 9);
    r.step = i % 3 - 1;
    t.ranges.push_back(r);
  }
  for (int i = 0; i < 500; ++i) {
    Allocation a;
    a.id = i + 1;
    a.bytes = (i % 13 == 0) ? 0 : 100 + i;
    a.alloc = 37 * i;
    a.free = (i % 4 == 0) ? -1 : (i % 7 == 0 ? a.alloc - 10 : a.alloc + 3000);
    a.range = (i % 11) * 7;  // some point nowhere
    a.device = (i % 50 == 0) ? 0 : -1;
    a.kind = i % 2;
    a.step = i % 5 - 2;
    t.allocations.push_back(a);
  }
  t.steps = {{0, 5000, 2000}, {1, 3000, 60000}, {1, 70000, 90000}};
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(1000, 700);
  io.DeltaTime = 1.0f / 60;
  unsigned char* px = nullptr;
  int w = 0, h = 0;
  io.IniFilename = nullptr;  // no imgui.ini left in the working directory
  io.Fonts->GetTexDataAsRGBA32(&px, &w, &h);
  {
    GuiApp app(view::TraceDocument::fromTrace(t, "adversarial"));
    for (int i = 0; i < 40; ++i) {
      io.MousePos = ImVec2(20.0f + 24.0f * i, 60.0f + 15.0f * (i % 40));
      io.MouseDown[0] = i % 3 == 0;
      io.MouseWheel = (i % 5 == 0) ? 1.0f : 0.0f;
      ImGui::NewFrame();
      app.frame();
      ImGui::Render();
    }
    EXPECT_GE(app.document()->run().memory.peak(), 0);
  }
  ImGui::DestroyContext();
}

}  // namespace
}  // namespace gcprof::gui

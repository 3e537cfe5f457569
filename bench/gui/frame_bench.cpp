// CPU time of one gcprof-gui frame (ImGui layout + draw lists, everything but
// the GPU) on fabricated traces of 1M and 10M allocations, zoomed out to the
// whole run and zoomed in to one layer's forward. Goal: under 16 ms at 10M.
// Results: bench/RESULTS.md.
#include <benchmark/benchmark.h>
#include <imgui.h>

#include <map>
#include <memory>

#include "fabricated_training.h"
#include "gui_app.h"
#include "theme.h"
#include "trace_document.h"

namespace {

using namespace gcprof;

// A headless ImGui context: fonts built on the CPU, no renderer.
struct HeadlessImGui {
  HeadlessImGui() {
    ImGui::CreateContext();
    gui::applyTheme();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1600, 900);
    // What the OpenGL3 back end declares: large draw lists split by offset.
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
    unsigned char* px = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&px, &w, &h);
  }
  ~HeadlessImGui() { ImGui::DestroyContext(); }
};

// 32 layers, 3 steps; `per_layer` saved + `per_layer` transient allocations
// in every layer's forward.
testing::TrainingShape shapeFor(int64_t allocations) {
  testing::TrainingShape s;
  s.layers = 32;
  s.steps = 3;
  s.saved_per_layer = static_cast<int>(allocations / (s.steps * s.layers * 2));
  s.transient_per_layer = s.saved_per_layer;
  s.param_bytes = 64ll << 20;
  s.activation_bytes = 64ll << 10;
  s.layer_forward_ns = static_cast<Ns>(s.saved_per_layer) * 400;
  return s;
}

struct Loaded {
  std::unique_ptr<gui::GuiApp> app;
  size_t allocations = 0;
};

Loaded& loaded(int64_t allocations) {
  static std::map<int64_t, Loaded> cache;
  auto it = cache.find(allocations);
  if (it != cache.end()) return it->second;
  // One at a time: the 10M trace takes a couple of GiB.
  cache.clear();
  Trace t = testing::fabricateTraining(shapeFor(allocations));
  Loaded l;
  l.allocations = t.allocations.size();
  l.app = std::make_unique<gui::GuiApp>(view::TraceDocument::fromTrace(std::move(t), "fabricated"));
  return cache.emplace(allocations, std::move(l)).first->second;
}

void frame(gui::GuiApp& app) {
  ImGui::NewFrame();
  app.frame();
  ImGui::Render();
}

void BM_Frame(benchmark::State& state) {
  static HeadlessImGui imgui;
  const int64_t allocations = state.range(0);
  const bool zoomed_in = state.range(1) != 0;
  Loaded& l = loaded(allocations);
  gui::GuiApp& app = *l.app;
  const view::RunView& run = app.document()->run();
  app.timeline().fitAll(run);
  app.timeline().setCursor(-1);
  if (zoomed_in) {
    // One layer's forward in the middle step.
    for (const Range& r : run.trace.ranges)
      if (r.step == 1 && r.name == "layers.16" && r.phase == Phase::Forward) {
        app.timeline().setWindow(view::TimeWindow::fit(static_cast<double>(r.start), static_cast<double>(r.end)));
        break;
      }
  }
  frame(app);  // settle the layout
  for (auto _ : state) frame(app);
  state.counters["allocations"] = static_cast<double>(l.allocations);
  state.counters["draw_vertices"] = static_cast<double>(ImGui::GetDrawData()->TotalVtxCount);
}

BENCHMARK(BM_Frame)
    ->ArgNames({"allocs", "zoomed_in"})
    ->Args({1'000'000, 0})
    ->Args({1'000'000, 1})
    ->Args({10'000'000, 0})
    ->Args({10'000'000, 1})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// The LOD query alone: one summary per pixel column of a 1500-px area.
void BM_MemoryColumns(benchmark::State& state) {
  Loaded& l = loaded(state.range(0));
  const view::RunView& run = l.app->document()->run();
  view::CurveColumns out;
  for (auto _ : state) {
    run.memory.columns(static_cast<double>(run.begin), static_cast<double>(run.end), 1500, out);
    benchmark::DoNotOptimize(out.max_total.data());
  }
}
BENCHMARK(BM_MemoryColumns)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

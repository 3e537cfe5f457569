#include "gui_app.h"
#include "byte_text.h"

#include <algorithm>

#include "start_choice.h"
#include "theme.h"

namespace gcprof::gui {
namespace {

std::string runLabel(const RunInfo& r) {
  std::string s = "run " + std::to_string(r.id);
  if (!r.name.empty()) s += " " + r.name;
  if (r.rank >= 0) s += " rank " + std::to_string(r.rank) + "/" + std::to_string(r.world_size);
  if (r.baseline_run) s += " (verifies run " + std::to_string(r.baseline_run) + ")";
  if (!r.status.empty() && r.status != "complete") s += " [" + r.status + "]";
  return s;
}

void legendItem(view::Rgba c, const std::string& label) {
  ImGui::ColorButton(("##" + label).c_str(), ImGui::ColorConvertU32ToFloat4(col(c)),
                     ImGuiColorEditFlags_NoTooltip, ImVec2(12, 12));
  ImGui::SameLine(0, 4);
  ImGui::TextUnformatted(label.c_str());
  ImGui::SameLine(0, 14);
}

}  // namespace

GuiApp::GuiApp(std::unique_ptr<view::TraceDocument> doc) : doc_(std::move(doc)) {
  if (doc_) runChanged();
}

bool GuiApp::open(const std::string& path) {
  std::string error;
  auto doc = view::TraceDocument::open(path, 0, &error);
  if (!doc) {
    error_ = error;
    return false;
  }
  doc_ = std::move(doc);
  error_.clear();
  runChanged();
  return true;
}

void GuiApp::openInBackground(const std::string& path, int64_t run, int64_t plan, int64_t step) {
  opening_ = std::make_unique<view::TraceOpening>(path, run);
  opening_plan_ = plan;
  opening_step_ = step;
}

void GuiApp::finishOpening() {
  std::string error;
  std::unique_ptr<view::TraceDocument> doc = opening_->take(&error);
  std::string path = opening_->path();
  opening_.reset();
  if (!doc) {
    error_ = error;
    return;
  }
  doc_ = std::move(doc);
  error_.clear();
  runChanged();
  if (opening_plan_ >= 0) {
    const auto& plans = doc_->plans();
    bool known = opening_plan_ == 0 || std::any_of(plans.begin(), plans.end(), [&](const view::PlanView& p) {
                   return p.id == opening_plan_;
                 });
    std::vector<int64_t> ids;
    for (const view::PlanView& p : plans) ids.push_back(p.id);
    if (known) doc_->selectPlan(opening_plan_);
    else error_ = "--plan " + std::to_string(opening_plan_) + ": " + path + " has no plan " +
                  std::to_string(opening_plan_) + " for this run; it has plans " + view::idRanges(ids);
  }
  if (opening_step_ >= 0) {
    const auto& steps = doc_->run().trace.steps;
    auto it = std::find_if(steps.begin(), steps.end(), [&](const Step& s) { return s.index == opening_step_; });
    std::vector<int64_t> ids;
    for (const Step& s : steps) ids.push_back(s.index);
    if (it != steps.end()) fitStep(static_cast<size_t>(it - steps.begin()));
    else error_ = "--step " + std::to_string(opening_step_) + ": the run has no step " +
                  std::to_string(opening_step_) + "; it has steps " + view::idRanges(ids);
  }
}

void GuiApp::runChanged() {
  timeline_.reset(doc_->run());
  tables_.reset();
  step_ = 0;
}

void GuiApp::fitStep(size_t index) {
  if (!doc_ || index >= doc_->run().trace.steps.size()) return;
  step_ = index;
  timeline_.fitStep(doc_->run(), index);
}

void GuiApp::frame() {
  const ImGuiIO& io = ImGui::GetIO();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("gcprof", nullptr, flags);
  if (opening_ && opening_->done()) finishOpening();
  if (opening_) {
    // The window stays responsive while a big run is read and prepared.
    ImGui::TextUnformatted("gcprof-gui");
    ImGui::TextUnformatted(opening_->status().c_str());
    ImGui::ProgressBar(opening_->fraction(), ImVec2(std::min(480.0f, io.DisplaySize.x - 20), 0));
    ImGui::End();
    return;
  }
  if (!doc_) {
    ImGui::TextUnformatted("gcprof-gui");
    if (!error_.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", error_.c_str());
    ImGui::TextDisabled("Drop a trace file (gcprof record -o trace.db -- ...) on this window.");
    ImGui::End();
    return;
  }
  toolbar();
  summary();
  legend();
  ImVec2 avail = ImGui::GetContentRegionAvail();
  float timeline_h = std::max(160.0f, avail.y * 0.64f);
  timeline_.draw(*doc_, ImVec2(avail.x, timeline_h));
  ImGui::Separator();
  avail = ImGui::GetContentRegionAvail();
  float half = (avail.x - ImGui::GetStyle().ItemSpacing.x) * 0.5f;
  ImGui::BeginChild("units", ImVec2(half, avail.y));
  // What fits is a tab beside the units where the file has sized runs or
  // the plan shown is a sized one (docs/gui.md).
  if ((!doc_->sizedRuns().empty() || doc_->whatFits()) && ImGui::BeginTabBar("left")) {
    ImVec2 inner = ImGui::GetContentRegionAvail();
    if (ImGui::BeginTabItem("Units")) {
      tables_.drawUnits(*doc_, timeline_, ImVec2(half, inner.y - ImGui::GetFrameHeightWithSpacing()));
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("What fits", nullptr, select_what_fits_ ? ImGuiTabItemFlags_SetSelected : 0)) {
      tables_.drawWhatFits(*doc_, ImVec2(half, inner.y));
      ImGui::EndTabItem();
    }
    select_what_fits_ = false;
    ImGui::EndTabBar();
  } else {
    tables_.drawUnits(*doc_, timeline_, ImVec2(half, avail.y));
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("live", ImVec2(half, avail.y));
  tables_.drawLive(*doc_, timeline_, ImVec2(half, avail.y));
  ImGui::EndChild();
  ImGui::End();
}

bool GuiApp::showWhatFits(int budget_percent, std::string* error) {
  if (!doc_->computeWhatFits(budget_percent, error)) return false;
  tables_.setWhatFitsPercent(budget_percent);
  select_what_fits_ = true;
  return true;
}

void GuiApp::toolbar() {
  ImGui::TextUnformatted("gcprof");
  ImGui::SameLine();
  ImGui::TextDisabled("%s", doc_->path().c_str());
  ImGui::SameLine(0, 20);

  ImGui::SetNextItemWidth(230);
  const RunInfo& current = doc_->run().trace.run;
  if (ImGui::BeginCombo("run", runLabel(current).c_str())) {
    for (const RunInfo& r : doc_->runs()) {
      if (ImGui::Selectable(runLabel(r).c_str(), r.id == current.id) && r.id != current.id) {
        std::string error;
        if (doc_->selectRun(r.id, &error)) runChanged();
        else error_ = error;
      }
    }
    ImGui::EndCombo();
  }
  // The rank picker: the other ranks of this run's job (torchrun, DDP, FSDP).
  std::vector<RunInfo> ranks = doc_->jobRanks();
  if (!ranks.empty()) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(90);
    // Copied: selecting a rank replaces the run `current` refers to.
    const int64_t shown = current.id;
    std::string here = current.rank >= 0 ? "rank " + std::to_string(current.rank) : "launcher";
    if (ImGui::BeginCombo("rank", here.c_str())) {
      for (const RunInfo& r : ranks) {
        std::string label = "rank " + std::to_string(r.rank) + " (run " + std::to_string(r.id) + ")";
        if (ImGui::Selectable(label.c_str(), r.id == shown) && r.id != shown) {
          std::string error;
          if (doc_->selectRun(r.id, &error)) runChanged();
          else error_ = error;
        }
      }
      ImGui::EndCombo();
    }
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(260);
  const view::PlanView* plan = doc_->selectedPlan();
  // Whether the plan shown was verified: the report shows the newest
  // verified plan, and a newer unverified one must not pass for it.
  std::string shown = plan ? plan->label() + (doc_->selectedVerification() ? ", verified" : ", not verified") : "none";
  if (ImGui::BeginCombo("plan", shown.c_str())) {
    if (ImGui::Selectable("none", !plan)) doc_->selectPlan(0);
    for (const view::PlanView& p : doc_->plans())
      if (ImGui::Selectable(p.label().c_str(), plan && plan->id == p.id)) doc_->selectPlan(p.id);
    ImGui::EndCombo();
  }
  if (ImGui::IsItemHovered() && !doc_->openedPlanNote().empty())
    ImGui::SetTooltip("opened on %s", doc_->openedPlanNote().c_str());
  ImGui::SameLine();
  ImGui::SetNextItemWidth(200);
  std::string measured = doc_->selectedVerification() ? "run " + std::to_string(doc_->selectedVerification()) : "none";
  if (ImGui::BeginCombo("measured", measured.c_str())) {
    std::string error;
    if (ImGui::Selectable("none", doc_->selectedVerification() == 0)) doc_->selectVerification(0, &error);
    for (const RunInfo& r : doc_->verificationRuns())
      if (ImGui::Selectable(runLabel(r).c_str(), r.id == doc_->selectedVerification()) &&
          !doc_->selectVerification(r.id, &error))
        error_ = error;
    ImGui::EndCombo();
  }
  ImGui::SameLine(0, 20);
  if (ImGui::Button("Fit all")) timeline_.fitAll(doc_->run());
  const size_t steps = doc_->run().trace.steps.size();
  if (steps > 0) {
    ImGui::SameLine();
    if (ImGui::ArrowButton("prev", ImGuiDir_Left)) step_ = step_ > 0 ? step_ - 1 : 0;
    ImGui::SameLine();
    if (ImGui::Button(("Fit step " + std::to_string(doc_->run().trace.steps[std::min(step_, steps - 1)].index)).c_str()))
      timeline_.fitStep(doc_->run(), std::min(step_, steps - 1));
    ImGui::SameLine();
    if (ImGui::ArrowButton("next", ImGuiDir_Right)) step_ = std::min(step_ + 1, steps - 1);
  }
  if (!error_.empty()) ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", error_.c_str());
}

void GuiApp::summary() {
  const view::RunView& run = doc_->run();
  std::string line = run.label();
  if (const view::PlanView* p = doc_->selectedPlan()) {
    if (p->predicted_peak > 0) line += " · predicted " + gcprof::formatBytes(p->predicted_peak);
    if (p->predicted_recompute > 0) line += " (+" + view::formatDuration(static_cast<double>(p->predicted_recompute)) + " recompute)";
  }
  if (const view::Overlay* p = doc_->predicted()) line += " · simulated " + gcprof::formatBytes(p->peak);
  if (const view::Overlay* v = doc_->verified()) {
    line += " · measured " + gcprof::formatBytes(v->peak);
    std::string verdict = doc_->verdict();
    if (!verdict.empty()) line += " " + verdict;
  }
  ImGui::TextUnformatted(line.c_str());
  if (doc_->selectedPlan() && !doc_->predictedNote().empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("(%s)", doc_->predictedNote().c_str());
  }
}

void GuiApp::legend() {
  const view::RunView& run = doc_->run();
  legendItem(view::palette::kPersistent, "persistent");
  const auto& units = run.series.units();
  // Long models: the first and last few units name the colour scheme.
  for (size_t i = 0; i < units.size(); ++i) {
    if (units.size() > 10 && i == 4) {
      ImGui::TextDisabled("...");
      ImGui::SameLine(0, 14);
      i = units.size() - 4;
    }
    legendItem(units[i].colour, units[i].name);
  }
  legendItem(view::palette::kOther, "other");
  if (doc_->selectedPlan()) legendItem(view::palette::kBudget, "budget");
  if (doc_->predicted()) legendItem(view::palette::kPredicted, "predicted");
  if (doc_->verified()) legendItem(view::palette::kVerified, "measured");
  ImGui::NewLine();
}

}  // namespace gcprof::gui

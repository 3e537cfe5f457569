#include "units/unsafe_units.h"

#include <algorithm>
#include <map>
#include <set>

#include "advice_error.h"

namespace gcprof::advisor {

namespace {
constexpr const char* kInPlacePrefix = "inplace ";
constexpr const char* kRecomputePrefix = "recompute ";
const char* const kInPlaceReason =
    "changes its input in place: recomputing it would not replay its forward";
const char* const kJobCheckpointReason =
    "is already checkpointed by the job (recomputed in its backward: Hugging Face "
    "gradient_checkpointing_enable(), timm set_grad_checkpointing(), diffusers "
    "enable_gradient_checkpointing() or torch.utils.checkpoint): its activations are dropped already, a plan would recompute it twice";
}

std::vector<ExcludedUnit> inPlaceModules(const Trace& trace) {
  std::set<std::string> names;
  const std::string prefix = kInPlacePrefix;
  for (const Scalar& s : trace.scalars)
    if (s.name.compare(0, prefix.size(), prefix) == 0) names.insert(s.name.substr(prefix.size()));
  std::vector<ExcludedUnit> out;
  for (const std::string& n : names) out.push_back({n, kInPlaceReason});
  return out;
}

namespace {

// HF's GradientCheckpointingLayer recomputes the layer's forward without its
// module hooks: the ranges name its children (h.0.attn, h.0.mlp, ...), not the
// layer. A module all of whose recorded children are recomputed is too.
void addParentsOfRecomputedChildren(const Trace& trace, std::set<std::string>& recomputed) {
  std::map<std::string, std::set<std::string>> children;  // parent -> recorded direct children
  for (const Range& r : trace.ranges) {
    size_t dot = r.name.rfind('.');
    if (r.domain == RangeDomain::Module && r.phase == Phase::Forward && dot != std::string::npos)
      children[r.name.substr(0, dot)].insert(r.name);
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [parent, kids] : children) {
      if (recomputed.count(parent)) continue;
      bool all = std::all_of(kids.begin(), kids.end(), [&](const std::string& k) { return recomputed.count(k) > 0; });
      if (all) grew = recomputed.insert(parent).second;
    }
  }
}

}  // namespace

std::vector<ExcludedUnit> jobCheckpointedModules(const Trace& trace) {
  std::set<std::string> names;
  const std::string prefix = kRecomputePrefix;
  for (const Range& r : trace.ranges)
    if (r.domain == RangeDomain::User && r.name.compare(0, prefix.size(), prefix) == 0)
      names.insert(r.name.substr(prefix.size()));
  if (!names.empty()) addParentsOfRecomputedChildren(trace, names);
  std::vector<ExcludedUnit> out;
  for (const std::string& n : names) out.push_back({n, kJobCheckpointReason});
  return out;
}

bool checkpointedByTheJob(const ExcludedUnit& u) { return u.reason == kJobCheckpointReason; }

void refuseRetainedGraphs(const Trace& trace) {
  for (const Scalar& s : trace.scalars)
    if (s.name == "retain_graph")
      throw AdviceError("step " + std::to_string(s.step) + " calls backward with retain_graph=True "
                        "(two losses with two backward calls, a multi-task head, or a GAN whose "
                        "discriminator's loss runs backward through the generator): the graph's "
                        "activations are freed by a later backward, not in the modules' own backward, "
                        "so gcprof cannot tell what a unit keeps or what checkpointing it would drop. "
                        "Record a version with one backward per step and apply its plan: two losses of "
                        "one step summed ((loss_a + loss_b).backward() gives the same gradients); a "
                        "GAN's discriminator trained on detached fakes (d(fake.detach())), which gives "
                        "the same updates when the generator's gradients are zeroed after the "
                        "discriminator's step (its first backward only fills generator gradients that "
                        "are thrown away)");
}

std::vector<ExcludedUnit> unsafeModules(const Trace& trace) {
  std::vector<ExcludedUnit> out = inPlaceModules(trace);
  for (ExcludedUnit& u : jobCheckpointedModules(trace)) out.push_back(std::move(u));
  return out;
}

std::vector<ExcludedUnit> excludeUnsafeUnits(UnitSelection& units, const std::vector<ExcludedUnit>& unsafe) {
  std::vector<ExcludedUnit> removed;
  std::vector<std::string> kept;
  for (const std::string& name : units.names) {
    auto hit = std::find_if(unsafe.begin(), unsafe.end(), [&](const ExcludedUnit& u) { return u.name == name; });
    if (hit == unsafe.end()) kept.push_back(name);
    else removed.push_back(*hit);
  }
  if (kept.empty() && !removed.empty()) {
    std::string list;
    for (size_t i = 0; i < removed.size() && i < 5; ++i) list += (i ? ", " : "") + removed[i].name;
    if (removed.size() > 5) list += ", ...";
    if (removed.front().reason == kJobCheckpointReason)
      throw AdviceError("every unit (" + units.rule + ") " + removed.front().reason + " (" + list +
                        "). The recorded peak is already the checkpointed one; to advise on the "
                        "job's own plan, record it without its checkpointing (the switch above "
                        "left off)");
    throw AdviceError("every unit (" + units.rule + ") " + removed.front().reason + " (" + list +
                      "); checkpointing them would recompute from changed inputs. Choose units that "
                      "contain them, e.g. --units with the enclosing blocks' names");
  }
  units.names = kept;
  return removed;
}

}  // namespace gcprof::advisor

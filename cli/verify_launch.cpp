#include "verify_launch.h"

#include <unistd.h>

#include <cctype>
#include <climits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "run_environment.h"

namespace gcprof::cli {

RestoredEnvironment restoredEnvironment(const std::string& env_json, const std::string& where) {
  RestoredEnvironment out;
  if (env_json.empty()) return out;
  nlohmann::json env = nlohmann::json::parse(env_json, nullptr, false);
  if (!env.is_object())
    throw std::runtime_error(where + ": the stored environment (runs.env) is not a JSON object; "
                             "give the command to run after --");
  for (auto& [name, value] : env.items()) {
    if (!value.is_string())
      throw std::runtime_error(where + ": the stored environment variable " + shellWord(name) +
                               " is not a string; give the command to run after --");
    std::string why = whyNotRestored(name);
    if (why.empty())
      out.restored.emplace_back(name, value.get<std::string>());
    else
      out.refused.push_back({name, value.get<std::string>(), why});
  }
  return out;
}

std::string shellWord(const std::string& word) {
  bool plain = !word.empty();
  for (unsigned char c : word)
    if (!(isalnum(c) || std::string("_@%+=:,./-").find(static_cast<char>(c)) != std::string::npos))
      plain = false;
  if (plain) return word;
  // JSON's escapes, ASCII only: every control byte and every non-ASCII
  // character (C1 controls among them) is spelled out.
  return nlohmann::json(word).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

void printLaunch(std::FILE* out, const LaunchOptions& o, const std::string& source,
                 const RestoredEnvironment& env) {
  std::string cmd;
  for (const std::string& a : o.argv) cmd += (cmd.empty() ? "" : " ") + shellWord(a);
  char here[PATH_MAX];
  std::string cwd = !o.cwd.empty() ? o.cwd : (getcwd(here, sizeof here) ? here : ".");
  std::fprintf(out, "gcprof verify: runs the command of %s\n", source.c_str());
  std::fprintf(out, "  command:   %s\n", cmd.c_str());
  std::fprintf(out, "  directory: %s\n", shellWord(cwd).c_str());
  if (env.restored.empty() && env.refused.empty())
    std::fprintf(out, "  environment: this shell's, nothing restored from the trace\n");
  else
    std::fprintf(out, "  environment: this shell's, and %zu variable(s) restored from the trace%s\n",
                 env.restored.size(), env.restored.empty() ? "" : ":");
  for (const auto& [name, value] : env.restored)
    std::fprintf(out, "    %s=%s\n", shellWord(name).c_str(), shellWord(value).c_str());
  for (const auto& [name, value] : o.extra_env)
    if (name == "GCPROF_PLAN") std::fprintf(out, "  plan:      GCPROF_PLAN=%s\n", shellWord(value).c_str());
  for (const RestoredEnvironment::Refused& r : env.refused)
    std::fprintf(out, "  not restored: %s=%s (%s)\n", shellWord(r.name).c_str(), shellWord(r.value).c_str(),
                 r.why.c_str());
  std::fflush(out);
}

}  // namespace gcprof::cli

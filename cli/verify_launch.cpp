#include "verify_launch.h"

#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "run_environment.h"
#include "utf8_text.h"

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

namespace {

// A character that prints as itself: not a C0 control, DEL, a C1 control
// (U+0080-U+009F, CSI among them) or a byte outside valid UTF-8. Its
// length at word[i], 0 when it does not print.
size_t printingLength(const std::string& word, size_t i) {
  const unsigned char c = static_cast<unsigned char>(word[i]);
  if (c < 0x20 || c == 0x7F) return 0;
  const size_t n = utf8SequenceLength(word, i);
  if (n == 2 && c == 0xC2 && static_cast<unsigned char>(word[i + 1]) <= 0x9F) return 0;
  return n;
}

}  // namespace

std::string shellWord(const std::string& word) {
  bool plain = !word.empty(), prints = true;
  for (unsigned char c : word)
    if (!(isalnum(c) || std::string("_@%+=:,./-").find(static_cast<char>(c)) != std::string::npos)) plain = false;
  for (size_t i = 0, n; prints && i < word.size(); i += n) prints = (n = printingLength(word, i)) > 0;
  if (plain) return word;
  if (prints) {  // single quotes: nothing inside is special but the quote
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  }
  // bash's $'...': every byte that does not print spelled \xHH, so that a
  // stored command can neither hide itself nor drive the terminal.
  std::string out = "$'";
  for (size_t i = 0; i < word.size();) {
    const size_t n = printingLength(word, i);
    if (n == 0) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(word[i]));
      out += hex;
      ++i;
    } else {
      if (word[i] == '\\' || word[i] == '\'') out += '\\';
      out.append(word, i, n);
      i += n;
    }
  }
  return out + "'";
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

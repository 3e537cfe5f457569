// What `gcprof verify` runs, said before it runs anything: a trace may come
// from someone else, and its command and environment are re-run as stored.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "recorded_launch.h"

namespace gcprof::cli {

// A run's stored environment (runs.env), split into what verify restores
// and what it leaves out, with the reason (run_environment.h says which).
struct RestoredEnvironment {
  std::vector<std::pair<std::string, std::string>> restored;
  struct Refused {
    std::string name, value, why;
  };
  std::vector<Refused> refused;
};

// `where` names the trace and run in the error for a damaged row.
RestoredEnvironment restoredEnvironment(const std::string& env_json, const std::string& where);

// One word of a command line as bash reads it back (copied from verify's
// output into a shell): plain characters as they are; other printing text,
// UTF-8 included, in single quotes; a word with a control character or a
// byte that is not UTF-8 in $'...' with those bytes spelled \xHH, so that
// a stored command cannot hide itself or drive the terminal.
std::string shellWord(const std::string& word);

// The command, its directory and every restored (and refused) variable.
// `source` says where the command comes from ("run 3 of trace.db", "after --").
void printLaunch(std::FILE* out, const LaunchOptions& o, const std::string& source,
                 const RestoredEnvironment& env);

}  // namespace gcprof::cli

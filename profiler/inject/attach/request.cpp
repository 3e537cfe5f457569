#include <cstdlib>
#include <sstream>

#include "attach/session.h"

namespace gcprof::inject::attach {

bool parseRequest(const std::string& text, Request& out, std::string& error) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) {
      error = "malformed line '" + line + "'";
      return false;
    }
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    long long n = std::strtoll(value.c_str(), nullptr, 10);
    if (key == "db") out.db = value;
    else if (key == "run_id") out.run_id = n;
    else if (key == "min_bytes") out.min_bytes = n;
    else if (key == "steps") out.steps = n;
    else if (key == "duration_ms") out.duration_ms = n;
    else if (key == "cli_pid") out.cli_pid = n;
    else if (key == "ctl") out.ctl = value;
    else if (key == "state") out.state = value;
    else if (key == "shim") out.shim = value;
    else if (key == "backend") out.backend = value;
  }
  if (out.db.empty() || out.run_id <= 0 || out.state.empty() || out.ctl.empty()) {
    error = "db, run_id, ctl and state are required";
    return false;
  }
  if (out.backend != "auto" && out.backend != "host" && out.backend != "cuda") {
    error = "backend must be auto, host or cuda, not '" + out.backend + "'";
    return false;
  }
  return true;
}

}  // namespace gcprof::inject::attach

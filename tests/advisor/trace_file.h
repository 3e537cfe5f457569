// Writes a hand-built trace into a trace file through RunWriter, as the
// injector would, so that tests exercise the store round trip too.
#pragma once

#include <string>

#include "run_writer.h"
#include "trace.h"

namespace gcprof::testing {

inline int64_t writeTrace(const std::string& path, Trace t) {
  t.run.command = R"(["train"])";
  t.run.status = "complete";
  return RunWriter(path).appendRun(t);
}

}  // namespace gcprof::testing

// Writes a hand-built trace into a trace file through RunWriter, as the
// injector would, so that tests exercise the store round trip too.
#pragma once

#include <string>

#include "run_writer.h"
#include "trace.h"

namespace gcprof::testing {

inline int64_t writeTrace(const std::string& path, const Trace& t) {
  RunWriter w(path);
  RunInfo info = t.run;
  info.command = R"(["train"])";
  int64_t run = w.createRun(info);
  w.begin();
  for (const Range& r : t.ranges) w.add(r);
  for (const Allocation& a : t.allocations) w.add(a);
  for (const Step& s : t.steps) w.add(s);
  for (const Scalar& s : t.scalars) w.add(s);
  w.commit();
  RunInfo done = t.run;
  done.status = "complete";
  w.finish(done);
  return run;
}

}  // namespace gcprof::testing

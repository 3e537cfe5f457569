// Opening the trace a verb works on and picking its run, with the errors
// users see when the file or run is not there.
#pragma once

#include <cstdio>
#include <string>

#include "trace_store.h"

namespace gcprof::cli {

// The run to work on: `requested`, or the newest run that is not a
// verification. Throws StoreError naming the file and what to do.
// A run still marked `running` is either being recorded now or lost its
// recorder to SIGKILL: say so instead of using it silently.
inline int64_t chooseRun(TraceStore& store, int64_t requested) {
  int64_t run = requested;
  if (run <= 0) {
    run = store.lastRun();
    if (run == 0)
      throw StoreError(store.path() + ": holds no recorded run; record one with `gcprof record -o " +
                       store.path() + " -- COMMAND`");
  }
  RunInfo info = store.run(run);  // throws when missing
  if (info.status == "running")
    std::fprintf(stderr,
                 "gcprof: warning: %s: run %lld is still marked running (being recorded now, or "
                 "its recorder was killed): its data may be incomplete\n",
                 store.path().c_str(), static_cast<long long>(run));
  return run;
}

}  // namespace gcprof::cli

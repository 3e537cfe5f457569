// Opening the trace a verb works on and picking its run, with the errors
// users see when the file or run is not there.
#pragma once

#include <string>

#include "trace_store.h"

namespace gcprof::cli {

// The run to work on: `requested`, or the newest run that is not a
// verification. Throws StoreError naming the file and what to do.
inline int64_t chooseRun(TraceStore& store, int64_t requested) {
  if (requested > 0) {
    store.run(requested);  // throws when missing
    return requested;
  }
  int64_t run = store.lastRun();
  if (run == 0)
    throw StoreError(store.path() + ": holds no recorded run; record one with `gcprof record -o " +
                     store.path() + " -- COMMAND`");
  return run;
}

}  // namespace gcprof::cli

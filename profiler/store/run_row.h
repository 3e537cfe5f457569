// The one statement that adds a row to `runs`: `gcprof record` makes the root
// process's run through TraceStore, the injector makes its descendants' runs
// through RunWriter, and both must write the same columns the same way.
#pragma once

#include <sqlite3.h>

#include <string>

#include "trace.h"

namespace gcprof {

// Inserts `r` (an empty backend becomes "host", an empty status "running";
// cwd and name are stored as valid UTF-8) and returns the new run's id.
// Throws StoreError naming `path`.
int64_t insertRun(sqlite3* db, const std::string& path, const RunInfo& r);

}  // namespace gcprof

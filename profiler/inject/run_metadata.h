// Who this recorded process is: its command line, working directory, the
// environment a re-run needs, rank, and links to a baseline run (verify).
#pragma once

#include "trace.h"

namespace gcprof::inject {

gcprof::RunInfo describeThisProcess();

}  // namespace gcprof::inject

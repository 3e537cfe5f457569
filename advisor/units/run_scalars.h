// A cost the python shim measures in the job and records as a scalar (per
// step, or once), read back as one figure.
#pragma once

#include <string>

#include "trace.h"

namespace gcprof::advisor {

// The median of the run's positive values of scalar `name`, rounded to ns;
// 0 when it has none.
Ns medianScalar(const Trace& trace, const std::string& name);

}  // namespace gcprof::advisor

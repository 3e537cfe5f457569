// Memory a library allocates on first use and keeps: born in a unit's
// forward and never freed in the recording. On CPU, MKL mallocs GEMM buffers
// per thread at the first matmul of each shape and keeps them: recorded on
// an AVX-512 Xeon with torch 2.15, HF BART's step 0 makes about 4.2 MiB per
// thread in the first encoder layer's q_proj, fc1 and fc2, alive to the end
// of the run. Checkpointing does not drop such memory and a replay finds it
// instead of making it again, so the chain model and the simulator leave it
// as recorded (counted as a replay's, it added 26 MiB to every plan's peak
// in step 0: the least peak was 119% of the recorded one, not 96%).
#pragma once

#include "trace.h"

namespace gcprof::advisor {

inline bool keptByTheLibrary(const Allocation& a) { return !a.freed(); }

}  // namespace gcprof::advisor

// The CUDA backend started in a job that already runs CUDA (`gcprof attach`).
// CUPTI takes subscribers after cuInit, so the same backend the driver starts
// at cuInit under `gcprof record` is started here from the attach thread:
// kernels and device allocations are recorded from that moment on. Memory
// the job held before is the attach baseline's (profiler/python/gcprof/
// attach.py reads the caching allocator's own snapshot).
#pragma once

#include <cstddef>

namespace gcprof::inject::cuda {

enum class LateStart { Started, NoCuda, Failed };

// NoCuda when the job has not loaded the CUDA driver (libcuda.so.1): a CPU
// job, nothing to do. Failed with `reason` filled (CUPTI missing, another
// CUPTI client such as torch.profiler attached, ...): host memory is still
// recorded. Once per process.
LateStart startInRunningJob(char* reason, size_t reason_size);

// At the job's exit while attached: every buffer CUPTI holds, to the writer.
void flushInRunningJob();

// At detach: flush, then disable and unsubscribe; the job runs on without
// CUPTI. The backend object stays (CUPTI may still hold its callbacks'
// addresses); the library is never unloaded.
void stopInRunningJob();

}  // namespace gcprof::inject::cuda

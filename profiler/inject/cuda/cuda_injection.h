// How the CUDA backend is started in a recorded process.
//
// `gcprof record` sets CUDA_INJECTION64_PATH to the injector, so the CUDA
// driver calls InitializeInjection() from inside cuInit, in every process that
// initialises CUDA, whether or not LD_PRELOAD also loaded us. That is the
// normal path and needs nothing from the rest of the injector.
#pragma once

namespace gcprof::inject::cuda {

// Starts the CUDA backend once per process; true when it is running. Does
// nothing (false) when the process is not recorded (no GCPROF_DB) or the run
// asked for --backend host. On failure prints one line to stderr and the job
// is recorded by the host backend alone. Thread-safe, idempotent.
bool attach();

// For the injector's start-up (LD_PRELOAD constructor): attaches only when
// --backend cuda was asked for and CUDA_INJECTION64_PATH is not set (someone
// preloaded us by hand); otherwise InitializeInjection attaches at cuInit.
// Subscribing before cuInit is supported by CUPTI.
bool attachAtStartup();

// Hands every CUPTI buffer over to the recorder (complete or not). Call it
// before the writer's last drain at exit; also registered with atexit by
// attach(). Safe to call when the backend never started, and in a forked
// child (where it does nothing: CUPTI does not survive fork).
void flush();

}  // namespace gcprof::inject::cuda

namespace gcprof::inject {
// The names the injector core calls (weak declarations in lifecycle.cpp):
// attachCudaBackend() = cuda::attachAtStartup(), flushCudaBackend() = cuda::flush().
void attachCudaBackend();
void flushCudaBackend();
}  // namespace gcprof::inject

// The CUDA driver's injection entry point (CUDA_INJECTION64_PATH).
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void);

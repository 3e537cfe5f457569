// PyTorch's native CUDA caching allocator observed in LibTorch jobs (and in
// python jobs, should the shim not have done it): at a device allocation's
// API entry (the allocator's first cudaMalloc / cuMemCreate comes after its
// device allocators exist), when the libc10_cuda.so the tracker library was
// built against is loaded, load libgcprof_allocator_trace.so from beside the
// injector and attach its tracker (profiler/allocator_trace, docs/cuda.md).
#pragma once

namespace gcprof::inject::cuda {

// Cheap once settled (one atomic load); never blocks, never throws.
void maybeAttachAllocatorTrace();

}  // namespace gcprof::inject::cuda

// The allocation hooks a running process's GOT slots point at while gcprof is
// attached (got_patch.h). They call the allocator the slots pointed at before
// (the first malloc in the global scope: glibc's, or a preloaded one) and
// report like the LD_PRELOAD hooks (malloc_hooks.cpp) do.
#pragma once

#include <cstddef>

#include "attach/got_patch.h"

namespace gcprof::inject::attach {

// False when the allocator's functions cannot be found (nothing is patched then).
bool resolveAllocator();
// The symbol -> hook table for patchLoadedObjects.
const GotHook* allocationHooks(size_t* count);

}  // namespace gcprof::inject::attach

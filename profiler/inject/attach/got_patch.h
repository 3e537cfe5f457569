// Allocation hooks installed into a running process without LD_PRELOAD: the
// GOT entries (PLT slots and -fno-plt GLOB_DAT slots) that name malloc, free
// and their kin in every loaded object are pointed at our hooks, and every
// entry's old value is kept so that detach puts it back.
#pragma once

#include <cstddef>

namespace gcprof::inject::attach {

struct GotHook {
  const char* symbol;  // "malloc"
  void* hook;          // what the slot is pointed at while attached
};

// Patches every object loaded now and not yet patched (ld.so, the vDSO and
// `self`, the object holding the hooks, are left alone). Called again, it
// patches only objects loaded since; cheap when none were (dlpi_adds).
// Returns the number of slots patched by this call.
size_t patchLoadedObjects(const GotHook* hooks, size_t n, const void* self);

// Puts back every patched slot of the objects still loaded; forgets the rest.
size_t restorePatchedSlots();

}  // namespace gcprof::inject::attach

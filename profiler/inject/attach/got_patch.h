// Allocation hooks installed into a running process without LD_PRELOAD: the
// GOT entries (PLT slots and -fno-plt GLOB_DAT slots) and the function
// pointers in data (MKL's i_malloc, i_free) that name malloc, free and their
// kin in every loaded object are pointed at our hooks, and every entry's old
// value is kept so that detach puts it back.
#pragma once

#include <cstddef>

namespace gcprof::inject::attach {

struct GotHook {
  const char* symbol;  // "malloc"
  void* hook;          // what the slot is pointed at while attached
  // Goes into every object before any other hook goes into any: free's hook,
  // so that no block an allocation hook records is freed unseen through an
  // object (or a GOT slot) patched later: an attached trace kept a 4.3 MiB
  // matmul buffer live, its malloc hooked in libtorch and its free not yet.
  bool before_others = false;
  // What the symbol resolves to in the global scope (the allocator's own
  // function): a pointer to it kept in data is patched only while it holds
  // this, not a function the job put there.
  void* real = nullptr;
};

// Patches every object loaded now and not yet patched (ld.so, the vDSO and
// `self`, the object holding the hooks, are left alone): the `before_others`
// hooks in all of them first, then the rest. Called again, it patches only
// objects loaded since; cheap when none were (dlpi_adds). Returns the number
// of slots patched by this call.
size_t patchLoadedObjects(const GotHook* hooks, size_t n, const void* self);

// Puts back every patched slot of the objects still loaded that still holds
// its hook; forgets the rest.
size_t restorePatchedSlots();

}  // namespace gcprof::inject::attach

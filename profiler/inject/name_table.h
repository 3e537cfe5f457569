// Interned range and scalar names: events carry a pointer into an append-only
// arena instead of copying strings, so the hot path never allocates.
#pragma once

#include <cstdint>

namespace gcprof::inject {

// Returns a stable NUL-terminated copy of `name` (the same pointer for equal
// names). Falls back to a fixed "<names full>" when the arena is exhausted.
// Names over 16 KiB keep their first bytes plus "#" and a 64-bit hash of the
// whole name: distinct long names stay distinct.
const char* internName(const char* name);

}  // namespace gcprof::inject

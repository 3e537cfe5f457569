// Host and device address spaces overlap: a host pointer and a device
// pointer (or two devices' pointers) can be equal. Every table of live memory
// (the hooks' live-address set, the writer's live blocks) keys a block by its
// address and its device together, the same way.
#pragma once

#include <cstdint>

namespace gcprof::inject {

// User-space addresses stay below 2^56 (five-level paging included): the
// device (-1 = host) goes in the top byte.
inline uint64_t addressKey(uint64_t addr, int device) {
  return addr ^ (uint64_t(uint8_t(device)) << 56);
}

}  // namespace gcprof::inject

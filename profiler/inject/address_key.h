// Host and device address spaces overlap: a host pointer and a device
// pointer (or two devices' pointers) can be equal; and a caching allocator's
// segment and the first block carved from it share their address. Every
// table of live memory (the hooks' live-address set, the writer's live
// blocks) keys a block by its address, its device and its kind (tensor or
// segment) together, the same way.
#pragma once

#include <cstdint>

namespace gcprof::inject {

// User-space addresses stay below 2^56 (five-level paging included): the
// device (-1 = host) goes in the top byte, its high bit flipped for
// segments (AllocKind::Segment). Devices 0..126 and the host stay apart in
// both kinds (a host segment would meet device 127's tensors: hosts have none).
inline uint64_t addressKey(uint64_t addr, int device, int kind = 0) {
  uint8_t space = uint8_t(device) ^ (kind == 1 ? 0x80 : 0);
  return addr ^ (uint64_t(space) << 56);
}

}  // namespace gcprof::inject

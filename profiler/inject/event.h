// One fixed-size record in a thread's buffer. Packed so that the hot path
// writes 48 bytes and no pointers to job memory are kept (names are interned).
#pragma once

#include <cstdint>

namespace gcprof::inject {

enum class EventType : uint8_t {
  Alloc, Free, RangeStart, RangeEnd, RangeIO, StepBegin, StepEnd, Scalar, Kernel,
  WindowOpen, WindowClose,
  Thread,  // a: the tid of the thread whose events follow in this buffer (never leaves the writer's drain)
};

struct Event {
  int64_t time;
  uint64_t a;  // Alloc/Free: address; Range*: range id; Step: index; Kernel: end time
  int64_t b;   // Alloc: bytes; RangeStart/Scalar/Kernel: interned name; RangeIO: input bytes
  int64_t c;   // Alloc: range; RangeStart: phase | domain << 8; RangeIO: output bytes;
               // Scalar: value bits; Kernel: correlation
  int64_t d;   // Alloc: stream; RangeStart: parent range; Kernel: range
  EventType type;
  uint8_t api;
  uint8_t kind;
  int8_t device;
  uint32_t stream32;  // Kernel: stream
};
static_assert(sizeof(Event) == 48, "Event must stay 48 bytes: it is the hot path's write size");

}  // namespace gcprof::inject

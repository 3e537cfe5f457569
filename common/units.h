// The two value types every part of gcprof measures in. Plain integers, not
// wrappers: the trace stores them as SQLite integers and the injector hands
// them across its C ABI; their arithmetic on trace input goes through
// saturating.h.
#pragma once

#include <cstdint>

namespace gcprof {

using Ns = int64_t;     // nanoseconds
using Bytes = int64_t;  // bytes

}  // namespace gcprof

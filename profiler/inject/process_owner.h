// The process the injector started in. A vfork child (posix_spawn,
// subprocess) shares its memory and calls exec or _exit: it must not touch
// the recording of the process it borrowed the memory from.
#pragma once

namespace gcprof::inject {

bool inOwnerProcess();

}  // namespace gcprof::inject

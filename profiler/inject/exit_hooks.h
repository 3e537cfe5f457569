// The exit code of a recorded process, for its run's status: `exit` and
// `_exit` are interposed (LD_PRELOAD) to note it. A torchrun rank that dies
// with os._exit(3) thus leaves "failed, exit 3" in its run, and `verify` can
// name it (docs/distributed.md).
#pragma once

namespace gcprof::inject {

// The code passed to exit() so far; 0 when none was (returning from main
// calls exit inside libc, which no interposition sees).
int exitCodeSeen();

}  // namespace gcprof::inject

// The processes a job started (torchrun's ranks and their helpers), found
// through /proc, so that a job cut short by `verify --timeout` leaves no
// orphaned rank behind.
#pragma once

#include <sys/types.h>

#include <vector>

namespace gcprof::cli {

// Not yet dead. A zombie is dead: a job stays one until its parent reaps it
// (the caller of terminateTree; the shell or test that started a job gcprof
// attached to), so kill(pid, 0) alone cannot tell.
bool running(pid_t pid);

// Every live descendant of `root` (not root itself), parents before children.
std::vector<pid_t> descendantsOf(pid_t root);

// SIGTERM to `root` and its descendants; once all of them (root included)
// are dead, or after `grace_ms`, SIGKILL to what is left of them. Does not
// reap `root` (its parent, the caller, does).
void terminateTree(pid_t root, int grace_ms);

}  // namespace gcprof::cli

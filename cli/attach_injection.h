// Loading libgcprof_attach.so into a running process with gdb (as heaptrack
// and memray do): gdb attaches, calls dlopen and gcprof_attach_start in one
// stopped thread, and detaches. gcprof_attach_start only starts a thread of
// ours; everything else happens there, with the job running.
#pragma once

#include <sys/types.h>

#include <string>

namespace gcprof::cli {

// Throws std::runtime_error with gdb's or dlopen's words when it fails.
// `request` is the session's key=value file (profiler/inject/attach/session.h).
void injectAttachLibrary(const std::string& gdb, pid_t pid, const std::string& library,
                         const std::string& request, const std::string& scratch_dir);

}  // namespace gcprof::cli

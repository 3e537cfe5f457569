// The folder of one `gcprof attach` session (TMPDIR/gcprof-attach-PID), which
// both sides remove: the CLI when it ends the session, the job's side when the
// CLI is gone (killed, or left with a second Ctrl-C) and cannot.
#pragma once

#include <unistd.h>

#include <string>

namespace gcprof::attach_session {

// Every file either side writes there: the CLI's pid, its detach request, the
// request itself, gdb's script and log; the job's state (and its temporary).
inline void removeFolder(const std::string& dir) {
  for (const char* f : {"cli", "ctl", "state", "state.tmp", "request", "inject.gdb", "gdb.log"})
    unlink((dir + "/" + f).c_str());
  rmdir(dir.c_str());
}

}  // namespace gcprof::attach_session

// What a path names when it is not a regular file. A trace or a plan must be
// one: SQLite or a reader opening a named pipe blocks until a writer comes
// (every verb hung), and a directory or a device read as damage.
#pragma once

#include <string>

namespace gcprof {

// "a directory", "a named pipe (FIFO)", "a device", "a socket" or "not a
// regular file"; nullptr for a regular file or a path that names nothing
// (its caller says that, or creates it).
const char* irregularFileKind(const std::string& path);

}  // namespace gcprof

#include "file_kind.h"

#include <sys/stat.h>

namespace gcprof {

const char* irregularFileKind(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return nullptr;
  return S_ISDIR(st.st_mode)                          ? "a directory"
         : S_ISFIFO(st.st_mode)                       ? "a named pipe (FIFO)"
         : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
         : S_ISSOCK(st.st_mode)                       ? "a socket"
                                                      : "not a regular file";
}

}  // namespace gcprof

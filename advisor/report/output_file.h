// A file gcprof writes for the user (a report, a plan, a Chrome trace, a
// screenshot), written whole or not at all. A full disk or a lost NFS server
// must not leave an empty or cut-short file behind a "written" message: the
// bytes go to a temporary file in the target's folder, every write and the
// close are checked, and only a complete file is renamed over the target.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace gcprof::advisor {

// What failed and where, e.g. "out.md: no space left on device".
struct OutputFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OutputFile {
 public:
  // Creates the temporary file now, so that a folder that cannot be written
  // is known before any work is done or stored. Throws OutputFileError.
  explicit OutputFile(std::string path);
  ~OutputFile();  // removes the temporary file unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes `content`, syncs, closes and renames it over the target. On a
  // failure the temporary file is removed, the target is left as it was,
  // and OutputFileError says why.
  void commit(const std::string& content);

  // The same written as it is made (a Chrome trace of ten million
  // allocations, never held whole): `text` is added to what is written, in
  // pieces of kBuffer bytes, each write checked; commit() then ends the
  // file as commit(content) does. A failed append throws OutputFileError
  // and removes the temporary file; the target is left as it was.
  void append(std::string_view text);
  void commit();
  static constexpr size_t kBuffer = size_t{1} << 20;

  const std::string& path() const { return path_; }

 private:
  std::string path_;    // as the user gave it (messages name it)
  std::string target_;  // what is replaced: path_ with its symbolic links resolved
  std::string temp_;    // empty when writing straight to a device or pipe
  int fd_ = -1;
  bool done_ = false;
  std::string buffer_;  // appended, not written yet

  void writeAll(std::string_view bytes);  // throws, the temporary file removed
  [[noreturn]] void failWith(int err);
};

// OutputFile(path).commit(content).
void writeOutputFile(const std::string& path, const std::string& content);

}  // namespace gcprof::advisor

#include "report/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <system_error>

namespace gcprof::advisor {
namespace {

std::string reason(int err) {
  std::string s = std::generic_category().message(err);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

[[noreturn]] void fail(const std::string& path, int err) {
  throw OutputFileError(path + ": " + reason(err));
}

std::string folderOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A name no other writer (another gcprof, another thread) picks: the pid
// and a counter, and O_EXCL to be sure.
std::string tempNameFor(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  std::string folder = folderOf(target);
  return (folder == "/" ? "" : folder) + "/." + baseOf(target) + ".gcprof-" +
         std::to_string(getpid()) + "-" + std::to_string(counter++) + ".tmp";
}

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)), target_(path_) {
  if (path_.empty()) throw OutputFileError("an output file needs a name");
  struct stat st;
  mode_t mode = 0;
  bool exists = stat(path_.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a pipe (/dev/stdout, a FIFO): written in place, as nothing
    // can be renamed over it; the writes are still checked.
    fd_ = open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) fail(path_, errno);
    return;
  }
  // A rename would replace a file the user may not write (0444): refuse it
  // as writing into it would be refused.
  if (exists && access(path_.c_str(), W_OK) != 0) fail(path_, errno);
  if (exists) {
    // Replace the file a symbolic link points to, not the link, and keep
    // the file's permissions.
    char resolved[PATH_MAX];
    if (realpath(path_.c_str(), resolved)) target_ = resolved;
    mode = st.st_mode & 07777;
  }
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = tempNameFor(target_);
    // 0666 less the umask, as any new file: the rename keeps these bits.
    fd_ = open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) break;
    if (errno == EEXIST && attempt < 100) continue;
    int err = errno;
    temp_.clear();
    if (err == ENOENT) throw OutputFileError(path_ + ": folder " + folderOf(target_) + " does not exist");
    fail(path_, err);
  }
  if (exists && fchmod(fd_, mode) != 0) {
    int err = errno;
    close(fd_);
    fd_ = -1;
    unlink(temp_.c_str());
    fail(path_, err);
  }
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) close(fd_);
  if (!done_ && !temp_.empty()) unlink(temp_.c_str());
}

void OutputFile::failWith(int err) {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!temp_.empty()) unlink(temp_.c_str());
  temp_.clear();
  fail(path_, err);
}

void OutputFile::writeAll(std::string_view bytes) {
  for (size_t off = 0; off < bytes.size();) {
    ssize_t n = write(fd_, bytes.data() + off, bytes.size() - off);
    if (n > 0) off += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR) failWith(errno);
    else if (n == 0) failWith(EIO);
  }
}

void OutputFile::append(std::string_view text) {
  if (done_ || fd_ < 0) throw OutputFileError(path_ + ": already written");
  buffer_.append(text);
  if (buffer_.size() < kBuffer) return;
  writeAll(buffer_);
  buffer_.clear();
}

void OutputFile::commit(const std::string& content) {
  if (done_ || fd_ < 0) throw OutputFileError(path_ + ": already written");
  writeAll(buffer_);
  buffer_.clear();
  writeAll(content);  // not through the buffer: a report is not copied
  commit();
}

void OutputFile::commit() {
  if (done_ || fd_ < 0) throw OutputFileError(path_ + ": already written");
  writeAll(buffer_);
  buffer_.clear();
  buffer_.shrink_to_fit();
  int err = 0;
  // Delayed allocation and network file systems report a full disk only
  // here; devices and pipes cannot be synced (EINVAL) and need not be.
  if (fsync(fd_) != 0 && !(temp_.empty() && (errno == EINVAL || errno == EROFS))) err = errno;
  if (close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && !temp_.empty() && rename(temp_.c_str(), target_.c_str()) != 0) err = errno;
  if (err != 0) failWith(err);
  done_ = true;
}

void writeOutputFile(const std::string& path, const std::string& content) {
  OutputFile file(path);
  file.commit(content);
}

}  // namespace gcprof::advisor

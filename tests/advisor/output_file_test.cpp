// report/output_file.h: a file is replaced whole or left as it was; links,
// permissions and devices are respected. (The full disk itself is
// tests/advisor/full_disk_e2e.py, on a mounted tmpfs.)
#include "report/output_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gcprof::advisor {
namespace {

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "gcprof-output-file-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string at(const std::string& name) const { return dir_ + "/" + name; }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    DIR* d = opendir(dir_.c_str());
    while (dirent* e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    closedir(d);
    return out;
  }

  std::string dir_;
};

TEST_F(OutputFileTest, WritesANewFileWithTheUsualPermissions) {
  mode_t mask = umask(022);
  writeOutputFile(at("r.md"), "report\n");
  umask(mask);
  EXPECT_EQ(read(at("r.md")), "report\n");
  struct stat st;
  ASSERT_EQ(stat(at("r.md").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(entries(), std::vector<std::string>{"r.md"});
}

TEST_F(OutputFileTest, ReplacesAnOldFileKeepingItsPermissions) {
  writeOutputFile(at("plan.json"), "old, and longer than the new one\n");
  chmod(at("plan.json").c_str(), 0640);
  writeOutputFile(at("plan.json"), "new\n");
  EXPECT_EQ(read(at("plan.json")), "new\n");
  struct stat st;
  ASSERT_EQ(stat(at("plan.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(OutputFileTest, WritesThroughASymbolicLinkAndKeepsIt) {
  writeOutputFile(at("real.md"), "old\n");
  ASSERT_EQ(symlink("real.md", at("link.md").c_str()), 0);
  writeOutputFile(at("link.md"), "new\n");
  struct stat st;
  ASSERT_EQ(lstat(at("link.md").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read(at("real.md")), "new\n");
}

TEST_F(OutputFileTest, AFileTheUserMayNotWriteIsNotReplaced) {
  if (geteuid() == 0) GTEST_SKIP() << "root may write any file";
  writeOutputFile(at("ro.md"), "kept\n");
  chmod(at("ro.md").c_str(), 0444);
  try {
    writeOutputFile(at("ro.md"), "new\n");
    FAIL() << "no error";
  } catch (const OutputFileError& e) {
    EXPECT_EQ(std::string(e.what()), at("ro.md") + ": permission denied");
  }
  EXPECT_EQ(read(at("ro.md")), "kept\n");
}

TEST_F(OutputFileTest, AnUncommittedFileLeavesNothingBehind) {
  writeOutputFile(at("kept.md"), "kept\n");
  { OutputFile f(at("kept.md")); }
  EXPECT_EQ(read(at("kept.md")), "kept\n");
  EXPECT_EQ(entries(), std::vector<std::string>{"kept.md"});
}

TEST_F(OutputFileTest, DevicesAreWrittenInPlace) {
  writeOutputFile("/dev/null", "discarded\n");
  struct stat st;
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputFileTest, FailuresSayWhatAndWhere) {
  try {
    writeOutputFile(at("missing/r.md"), "x");
    FAIL() << "no error";
  } catch (const OutputFileError& e) {
    EXPECT_EQ(std::string(e.what()), at("missing/r.md") + ": folder " + at("missing") + " does not exist");
  }
  try {
    writeOutputFile(dir_, "x");
    FAIL() << "no error";
  } catch (const OutputFileError& e) {
    EXPECT_EQ(std::string(e.what()), dir_ + ": is a directory");
  }
  // /dev/full: every write fails as on a full disk.
  try {
    writeOutputFile("/dev/full", "x");
    FAIL() << "no error";
  } catch (const OutputFileError& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/full: no space left on device");
  }
}

// Written as it is made (export): a write that fails part way, here past a
// file size limit as on a full disk, is an error naming the file, and
// leaves neither a cut-short file nor the temporary one; an old file stays.
TEST_F(OutputFileTest, AFileWrittenAsItIsMadeIsWholeOrNotThere) {
  writeOutputFile(at("old.json"), "old\n");
  auto writeInChild = [&](const std::string& name, size_t bytes) {
    pid_t child = fork();
    if (child == 0) {
      signal(SIGXFSZ, SIG_IGN);  // the write fails with EFBIG instead
      struct rlimit limit = {size_t{3} << 20, size_t{3} << 20};
      setrlimit(RLIMIT_FSIZE, &limit);
      int code = 0;
      try {
        OutputFile f(at(name));
        const std::string piece(1024, 'x');
        for (size_t n = 0; n < bytes; n += piece.size()) f.append(piece);
        f.commit();
      } catch (const OutputFileError& e) {
        code = std::string(e.what()) == at(name) + ": file too large" ? 3 : 4;
      }
      _exit(code);
    }
    int status = -1;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(writeInChild("new.json", size_t{2} << 20), 0);  // under the limit: written
  EXPECT_EQ(read(at("new.json")).size(), size_t{2} << 20);
  EXPECT_EQ(writeInChild("big.json", size_t{8} << 20), 3);
  EXPECT_EQ(writeInChild("old.json", size_t{8} << 20), 3);
  EXPECT_EQ(read(at("old.json")), "old\n");
  std::vector<std::string> left = entries();
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"new.json", "old.json"}));
}

}  // namespace
}  // namespace gcprof::advisor

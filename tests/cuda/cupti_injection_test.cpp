// attach()/InitializeInjection with the real CuptiLibrary, each case in its
// own process (CMakeLists.txt): attach decides once per process.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda_injection.h"
#include "recorder_test_double.h"

namespace {

bool driverPresent() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(CuptiInjection, NotRecordedDoesNothing) {
  unsetenv("GCPROF_DB");
  testing::internal::CaptureStderr();
  EXPECT_EQ(InitializeInjection(), 1);
  EXPECT_FALSE(gcprof::inject::cuda::attach());
  gcprof::inject::cuda::flush();
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(CuptiInjection, HostBackendDoesNothing) {
  setenv("GCPROF_DB", "/tmp/never-written.db", 1);
  setenv("GCPROF_BACKEND", "host", 1);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(gcprof::inject::cuda::attach());
  EXPECT_FALSE(gcprof::inject::cuda::attachAtStartup());
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

// This machine's situation in CI: CUPTI installed, no driver, no GPU.
TEST(CuptiInjection, NoDriverFallsBackToHostInOneLine) {
  if (driverPresent()) GTEST_SKIP() << "a CUDA driver is installed here";
  setenv("GCPROF_DB", "/tmp/never-written.db", 1);
  setenv("GCPROF_BACKEND", "cuda", 1);
  unsetenv("CUDA_INJECTION64_PATH");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(gcprof::inject::cuda::attachAtStartup());
  EXPECT_EQ(InitializeInjection(), 1) << "the job runs on whatever happens";
  gcprof::inject::cuda::flush();
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("gcprof: CUDA backend off: ", 0), 0u) << err;
  EXPECT_NE(err.find("host backend"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "exactly one line: " << err;
  EXPECT_EQ(gcprof::inject::test_double::log().backend, "host");
}

}  // namespace

// The real libcupti through dlopen: every symbol we bind exists under the
// name we look it up by, and a wrong GCPROF_CUPTI_LIB is reported, not fatal.
#include "cupti_library.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace gcprof::inject::cuda {
namespace {

TEST(CuptiLibrary, BindsEveryEntryPointOfTheInstalledCupti) {
  unsetenv("GCPROF_CUPTI_LIB");
  CuptiLibrary lib;
  if (!lib.available() &&
      std::string(lib.unavailableReason()).find("not found") != std::string::npos)
    GTEST_SKIP() << lib.unavailableReason();
  ASSERT_TRUE(lib.available()) << lib.unavailableReason();
  EXPECT_NE(std::string(lib.path()), "");
  uint32_t version = 12345;
  EXPECT_EQ(lib.getVersion(&version), CUPTI_SUCCESS);
  // Without a driver this CUPTI answers 0; with one, at least our minimum.
  EXPECT_TRUE(version == 0 || version >= 18) << version;
  EXPECT_STREQ(lib.resultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
               "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
}

TEST(CuptiLibrary, AWrongGcprofCuptiLibIsAReasonNotACrash) {
  setenv("GCPROF_CUPTI_LIB", "/nonexistent/libcupti.so", 1);
  CuptiLibrary lib;
  unsetenv("GCPROF_CUPTI_LIB");
  EXPECT_FALSE(lib.available());
  EXPECT_NE(std::string(lib.unavailableReason()).find("/nonexistent/libcupti.so"),
            std::string::npos)
      << lib.unavailableReason();
}

}  // namespace
}  // namespace gcprof::inject::cuda

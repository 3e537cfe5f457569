// Bytes from the job become valid UTF-8 before they reach the trace.
#include <gtest/gtest.h>

#include "run_environment.h"
#include "utf8_text.h"

using gcprof::isValidUtf8;
using gcprof::validUtf8;

TEST(Utf8Text, ValidTextIsUnchanged) {
  for (const char* s : {"", "layers.3.mlp", "caf\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}) {
    EXPECT_TRUE(isValidUtf8(s)) << s;
    EXPECT_EQ(validUtf8(s), s);
  }
}

TEST(Utf8Text, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(validUtf8("caf\xE9"), "caf\xEF\xBF\xBD");          // Latin-1
  EXPECT_EQ(validUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(validUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(validUtf8("a\xE2\x82"), "a\xEF\xBF\xBD\xEF\xBF\xBD");  // cut short
  EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
}

TEST(Utf8Text, JsonStringsAreValid) {
  EXPECT_EQ(gcprof::jsonString("caf\xE9\n"), "\"caf\xEF\xBF\xBD\\u000a\"");
}

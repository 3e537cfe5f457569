// Text from the job (argv, cwd, environment, range and scalar names) is bytes;
// the trace stores UTF-8 so that JSON output, reports and JUnit stay valid.
#pragma once

#include <string>

namespace gcprof {

bool isValidUtf8(const std::string& s);
// Length of the valid UTF-8 sequence starting at s[i], 0 when invalid
// (overlong forms, surrogates and code points above U+10FFFF included).
size_t utf8SequenceLength(const std::string& s, size_t i);
// `s` with every byte that is not part of a valid UTF-8 sequence replaced by
// U+FFFD (as nlohmann's error_handler_t::replace does); `s` itself when valid.
std::string validUtf8(const std::string& s);

}  // namespace gcprof

// Text from the job (module and operator names, commands, run names) as it
// may be printed to a terminal or a CI log.
#pragma once

#include <string>

namespace gcprof::cli {

// Names and commands come from the job: an escape sequence in a module name
// must not drive the user's terminal, and a CR or LF must not forge a line
// of a CI log. C0 controls, DEL and UTF-8's C1 controls (0xC2 0x80-0x9F, CSI
// among them) print as '?'.
inline std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F &&
        static_cast<unsigned char>(s[i + 1]) >= 0x80) {
      out += '?';
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// printable() for gcprof's own messages of several lines, which may quote
// names from the job: a line break followed by two spaces (their
// continuation lines are indented) is kept, any other prints as '?'. A
// name can still break a line that way, but not start one at its first
// column, where a CI log reads its commands (`::error::`).
inline std::string printableLines(const std::string& s) {
  std::string out;
  size_t from = 0;
  for (size_t at; (at = s.find("\n  ", from)) != std::string::npos; from = at + 1)
    out += printable(s.substr(from, at - from)) + "\n";
  return out + printable(s.substr(from));
}

}  // namespace gcprof::cli

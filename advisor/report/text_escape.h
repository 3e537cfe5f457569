// Escaping for the report formats: XML/HTML text and attributes, Markdown cells.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>

#include "trace.h"

namespace gcprof::advisor {

inline std::string xmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') out += '?';
        else out += c;
    }
  }
  return out;
}

inline std::string markdownCell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// A name as inline code that nothing in it can end early: the fence is one
// backtick longer than the longest run inside, control characters become '?',
// and '|' is escaped for table cells. Names come from the job (module names,
// paths), and the report lands in places like $GITHUB_STEP_SUMMARY.
inline std::string markdownCode(const std::string& s) {
  std::string body;
  size_t run = 0, longest = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|') body += "\\|";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) body += '?';
    else body += c;
  }
  std::string fence(longest + 1, '`');
  bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

inline std::string mib(Bytes b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

}  // namespace gcprof::advisor

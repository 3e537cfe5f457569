// A statement's parameters bound in one call, in order: the recorder's
// writer, the run row and the trace store bind through it, so that each
// C++ type maps to one SQLite type in one place.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace gcprof {

inline void bindValue(sqlite3_stmt* st, int i, int v) { sqlite3_bind_int(st, i, v); }
inline void bindValue(sqlite3_stmt* st, int i, int64_t v) { sqlite3_bind_int64(st, i, v); }
inline void bindValue(sqlite3_stmt* st, int i, double v) { sqlite3_bind_double(st, i, v); }
// A std::string binds whole; a C string up to its first NUL.
inline void bindValue(sqlite3_stmt* st, int i, const std::string& v) {
  sqlite3_bind_text(st, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}
inline void bindValue(sqlite3_stmt* st, int i, const char* v) { sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT); }

// Binds `values` to parameters first, first + 1, ...
template <typename... Values>
void bindValues(sqlite3_stmt* st, int first, const Values&... values) {
  int i = first;
  (bindValue(st, i++, values), ...);
}

}  // namespace gcprof

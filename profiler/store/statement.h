// The prepared statement the trace store reads and writes through: it
// finalizes itself, and an SQLite error names the trace file.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "bind_values.h"
#include "schema.h"
#include "trace_store.h"

namespace gcprof {

// A prepared statement that finalizes itself and reports errors with the path.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK)
      throw StoreError(sqliteProblem(db, path, kDamaged));
  }
  ~Stmt() { sqlite3_finalize(st_); }
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw StoreError(sqliteProblem(db_, path_, kDamaged));
  }
  void bind(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
  // Binds the statement's parameters in order, from the first.
  template <typename... Values>
  void bindAll(const Values&... values) {
    bindValues(st_, 1, values...);
  }
  int64_t i64(int c) { return sqlite3_column_int64(st_, c); }
  bool isNull(int c) { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  double f64(int c) { return sqlite3_column_double(st_, c); }
  std::string text(int c) {
    const unsigned char* t = sqlite3_column_text(st_, c);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  // The text without a copy: valid until the next step (a batch of
  // allocations is tens of kilobytes, read ten thousand times a trace).
  std::string_view textView(int c) {
    const unsigned char* t = sqlite3_column_text(st_, c);
    return t ? std::string_view(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(st_, c)))
             : std::string_view();
  }
  // Reads the row's columns, from the first, into `fields` in order.
  template <typename... Fields>
  void columns(Fields&... fields) {
    int c = 0;
    (column(c++, fields), ...);
  }

 private:
  void column(int c, int64_t& v) { v = i64(c); }
  void column(int c, int& v) { v = static_cast<int>(i64(c)); }
  void column(int c, double& v) { v = f64(c); }
  void column(int c, std::string& v) { v = text(c); }
  template <typename Enum, typename = std::enable_if_t<std::is_enum_v<Enum>>>
  void column(int c, Enum& v) {
    v = static_cast<Enum>(i64(c));
  }

  static constexpr const char* kDamaged = "is the trace damaged?";
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* st_ = nullptr;
};

}  // namespace gcprof

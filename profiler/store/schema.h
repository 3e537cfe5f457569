// The trace store's SQLite schema: creation, version checks and migrations.
// Shared by the injector (which writes runs) and everything that reads them.
#pragma once

#include <sqlite3.h>

#include <stdexcept>
#include <string>

namespace gcprof {

// The schema version this build writes (PRAGMA user_version). Bump it with a
// migration in schema.cpp and a line in docs/schema.md.
constexpr int kSchemaVersion = 7;

// Every store failure carries the file and what to do about it.
struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Creates the tables in an empty file, or checks that an existing one is a
// gcprof trace this build can read (migrating older versions). Throws
// StoreError naming `path` otherwise.
void ensureSchema(sqlite3* db, const std::string& path, bool writable);

// PRAGMA user_version of an open file (readers of version 1 files must not
// ask for the columns version 2 added; before version 3 a block's number is
// its rowid, see allocationIdColumn).
int schemaVersionOf(sqlite3* db, const std::string& path);

// The column that numbers a run's allocation rows in a file of `version`:
// `id` from version 3 on, the rowid before.
inline const char* allocationIdColumn(int version) { return version >= 3 ? "id" : "rowid"; }

// The table of allocations written one row each in a file of `version`: from
// version 4 on `allocation_rows`, beside `allocation_batches` (many rows each,
// allocation_batch.h), both shown by the view `allocations`; before, the
// table `allocations` itself.
inline const char* allocationRowTable(int version) {
  return version >= 4 ? "allocation_rows" : "allocations";
}

// The table of ranges written one row each in a file of `version`: from
// version 5 on `range_rows`, beside `range_batches` (range_batch.h) and
// `range_device_time`, all shown by the view `ranges`; before, the table
// `ranges` itself.
inline const char* rangeRowTable(int version) { return version >= 5 ? "range_rows" : "ranges"; }

// What the last SQLite error on `db` means for the user: a lock that another
// process held past our busy timeout is not damage; anything else is
// "<path>: <sqlite message>" followed by `otherwise`.
std::string sqliteProblem(sqlite3* db, const std::string& path, const std::string& otherwise);

// Runs one statement, throwing StoreError("path: what: sqlite message").
void exec(sqlite3* db, const std::string& path, const char* sql);

}  // namespace gcprof

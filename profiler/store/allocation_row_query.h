// The allocations a run holds as rows of their own (`allocation_rows`;
// before version 4 every row, in `allocations`), read one at a time in
// (alloc_ns, id) order: a walk along the table's key (version 3 on), no
// sort. The loader takes them all; the allocation stream merges them with
// the batches' rows as it goes.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "allocation_contexts.h"
#include "statement.h"
#include "trace.h"

namespace gcprof {

class AllocationRowQuery {
 public:
  AllocationRowQuery(sqlite3* db, const std::string& path, int version, int64_t run);
  // The next row into `a`, its stream and thread kept in `contexts`; false
  // after the last. Throws StoreError naming the file, the run and the row
  // on a value past its narrow field.
  bool next(Allocation& a, AllocationContexts& contexts);

 private:
  const std::string& path_;
  int64_t run_;
  Stmt s_;
};

}  // namespace gcprof

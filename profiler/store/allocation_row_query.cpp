#include "allocation_row_query.h"

namespace gcprof {
namespace {

std::string rowsInTimeOrder(int version) {
  const std::string number = allocationIdColumn(version);
  return "SELECT " + number + ", addr, bytes, device, stream, thread, api, alloc_ns, free_ns, range, step, kind FROM " +
         allocationRowTable(version) + " WHERE run=? ORDER BY alloc_ns, " + number;
}

}  // namespace

AllocationRowQuery::AllocationRowQuery(sqlite3* db, const std::string& path, int version, int64_t run)
    : path_(path), run_(run), s_(db, path, rowsInTimeOrder(version).c_str()) {
  s_.bind(1, run);
}

bool AllocationRowQuery::next(Allocation& a, AllocationContexts& contexts) {
  if (!s_.step()) return false;
  a = Allocation{};
  a.id = s_.i64(0);
  if (!setNarrowFields(a, s_.i64(9), s_.i64(10), s_.i64(3), s_.i64(6), s_.i64(11)))
    throw StoreError(path_ + ": run " + std::to_string(run_) + ": allocation " + std::to_string(a.id) +
                     " is damaged (a range, step, device, api or kind out of range)");
  a.addr = static_cast<uint64_t>(s_.i64(1));
  a.bytes = s_.i64(2);
  a.context = contexts.intern({s_.i64(4), s_.i64(5)});
  a.alloc = s_.i64(7);
  a.free = s_.i64(8);
  return true;
}

}  // namespace gcprof

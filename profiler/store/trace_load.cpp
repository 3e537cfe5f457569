#include "trace_load.h"

#include <algorithm>
#include <new>

#include "allocation_batch.h"
#include "allocation_frees.h"
#include "allocation_order.h"
#include "allocation_row_query.h"
#include "range_batch.h"
#include "statement.h"

namespace gcprof {
namespace {

using Progress = std::function<void(int64_t done, int64_t total)>;

// One run's rows in one trace file.
struct RunRows {
  sqlite3* db;
  const std::string& path;
  int version;
  int64_t id;
};

// Tells `progress` every 65,536 rows read.
class RowProgress {
 public:
  RowProgress(const Progress& progress, int64_t total) : progress_(progress), total_(total) {}
  void row() {
    if (progress_ && (++done_ & 0xffff) == 0) progress_(std::min(done_, total_), total_);
  }

 private:
  const Progress& progress_;
  int64_t total_, done_ = 0;
};

// Ranges and allocations are nearly all of a big run's rows. Counted first
// so that the vectors are allocated once: growing a vector of ten million
// allocations by doubling held up to three times its size. Returns the
// rows counted.
int64_t reserveRows(const RunRows& r, Trace& t, bool with_allocations) {
  const std::string rows = std::string("SELECT count(*) FROM ") + allocationRowTable(r.version) + " WHERE run=?";
  // Ranges, allocation rows, allocation batches' rows, range batches' rows.
  std::vector<std::string> counts{std::string("SELECT count(*) FROM ") + rangeRowTable(r.version) + " WHERE run=?",
                                  rows};
  if (r.version >= 4) counts.push_back("SELECT coalesce(sum(count), 0) FROM allocation_batches WHERE run=?");
  if (r.version >= 5) counts.push_back("SELECT coalesce(sum(count), 0) FROM range_batches WHERE run=?");
  int64_t n[4] = {0, 0, 0, 0}, total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    Stmt c(r.db, r.path, counts[i].c_str());
    c.bind(1, r.id);
    if (c.step()) n[i] = std::max<int64_t>(0, c.i64(0));
    total += n[i];
  }
  // A damaged count must not reserve more than the file can hold (a row
  // takes more than 8 bytes of it); a wrong one only costs reallocations.
  Stmt pages(r.db, r.path, "SELECT page_count * page_size FROM pragma_page_count, pragma_page_size");
  const int64_t most = pages.step() ? std::max<int64_t>(0, pages.i64(0)) / 8 : 0;
  try {
    t.ranges.reserve(static_cast<size_t>(std::min(n[0] + n[3], most)));
    if (with_allocations) t.allocations.reserve(static_cast<size_t>(std::min(n[1] + n[2], most)));
  } catch (const std::bad_alloc&) {
    // Grown as read instead.
  }
  return total;
}

// Appends one row to `out` per result of `sql` (whose one parameter is the
// run), as `read` makes it of the statement.
template <typename Row, typename Read>
void readRows(const RunRows& r, const std::string& sql, std::vector<Row>& out, RowProgress* progress, Read read) {
  Stmt s(r.db, r.path, sql.c_str());
  s.bind(1, r.id);
  while (s.step()) {
    out.push_back(read(s));
    if (progress) progress->row();
  }
}

Range rangeFrom(Stmt& s) {
  Range g;
  s.columns(g.id, g.name, g.domain, g.phase, g.thread, g.depth, g.parent, g.start, g.end, g.step, g.device_ns,
            g.input_bytes, g.output_bytes);
  return g;
}

Kernel kernelFrom(Stmt& s) {
  Kernel k;
  s.columns(k.id, k.name, k.device, k.stream, k.start, k.end, k.correlation, k.range);
  return k;
}

// From version 3 the table is clustered by (run, alloc_ns, id): this is a
// walk along its primary key, no sort. `add` takes each row.
template <typename Add>
void readAllocationRows(const RunRows& r, AllocationContexts& contexts, RowProgress& progress, Add add) {
  AllocationRowQuery rows(r.db, r.path, r.version, r.id);
  Allocation a;
  while (rows.next(a, contexts)) {
    add(a);
    progress.row();
  }
}

// The run's rows in `KIND_batches` (batch_base.h), batch by batch in id
// order, each parsed into `out` by `parse`; a damaged one is named by its
// first id.
template <typename Out, typename Parse>
void readBatches(const RunRows& r, const std::string& kind, Out& out, RowProgress* progress, Parse parse) {
  Stmt s(r.db, r.path, ("SELECT first_id, base_ns, rows FROM " + kind + "_batches WHERE run=? ORDER BY first_id").c_str());
  s.bind(1, r.id);
  std::string problem;
  while (s.step()) {
    const size_t before = out.size();
    if (!parse(s.textView(2), BatchBase{s.i64(0), s.i64(1)}, out, problem))
      throw damagedBatch(r.path, r.id, kind, s.i64(0), problem);
    for (size_t i = before; progress && i < out.size(); ++i) progress->row();
  }
}

// Version 6: the free times of blocks written while live
// (allocation_frees.h), in the rows' own order.
void readFrees(const RunRows& r, std::vector<Allocation>& byAlloc) {
  std::vector<Free> frees;
  Stmt s(r.db, r.path, "SELECT alloc_ns, id, free_ns FROM allocation_frees WHERE run=? ORDER BY alloc_ns, id");
  s.bind(1, r.id);
  while (s.step()) frees.push_back(Free{s.i64(1), s.i64(0), s.i64(2)});
  applyFrees(frees, byAlloc);
}

// Version 4: most rows are in batches (allocation_batch.h), in the order the
// recorder wrote them (at their free): read into blocks with the rows of
// their own, then all put in (alloc_ns, id) order.
void readAllocationBatches(const RunRows& r, Trace& t, RowProgress& progress) {
  AllocationBlocks read;
  readAllocationRows(r, t.contexts, progress, [&](const Allocation& a) { read.append(a); });
  readBatches(r, "allocation", read, &progress,
              [&](std::string_view text, const BatchBase& base, AllocationBlocks& out, std::string& problem) {
                return parseBatch(text, base, out, t.contexts, problem);
              });
  moveByAllocation(read, t.allocations);
  if (r.version >= 6) readFrees(r, t.allocations);
}

// Version 5: the rows of their own, the batches (range_batch.h) and the
// kernel time kept beside them (range_device_time).
void readRangeBatches(const RunRows& r, std::vector<Range>& out, RowProgress* progress) {
  readBatches(r, "range", out, progress, parseRangeBatch);
  auto byId = [](const Range& a, const Range& b) { return a.id < b.id; };
  if (!std::is_sorted(out.begin(), out.end(), byId)) std::stable_sort(out.begin(), out.end(), byId);
  Stmt time(r.db, r.path, "SELECT id, device_ns FROM range_device_time WHERE run=? ORDER BY id");
  time.bind(1, r.id);
  auto next = out.begin();
  while (time.step()) {
    Range key;
    key.id = time.i64(0);
    next = std::lower_bound(next, out.end(), key, byId);
    if (next != out.end() && next->id == key.id) next->device_ns = time.i64(1);
  }
}

void readRanges(const RunRows& r, std::vector<Range>& out, RowProgress* progress) {
  readRows(r,
           std::string("SELECT id, name, domain, phase, thread, depth, parent, start_ns, end_ns, step, device_ns,"
                       " input_bytes, output_bytes FROM ") +
               rangeRowTable(r.version) + " WHERE run=? ORDER BY id",
           out, progress, rangeFrom);
  if (r.version >= 5) readRangeBatches(r, out, progress);
}

}  // namespace

StoreError damagedBatch(const std::string& path, int64_t run, const std::string& kind, int64_t first_id,
                        const std::string& problem) {
  return StoreError(path + ": run " + std::to_string(run) + ": the " + kind + " batch from id " +
                    std::to_string(first_id) + " is damaged (" + problem + ")");
}

std::vector<Range> loadRanges(sqlite3* db, const std::string& path, int version, int64_t run) {
  std::vector<Range> out;
  readRanges(RunRows{db, path, version, run}, out, nullptr);
  return out;
}

Trace loadTrace(sqlite3* db, const std::string& path, int version, const RunInfo& run, const Progress& progress,
                bool with_allocations) {
  Trace t;
  t.run = run;
  RunRows r{db, path, version, run.id};
  int64_t total = reserveRows(r, t, with_allocations);
  if (progress) progress(0, total);
  RowProgress rows(progress, total);
  readRanges(r, t.ranges, &rows);
  // In (start, id) order. In id order they are nearly in it already: a
  // range is numbered when it opens.
  std::stable_sort(t.ranges.begin(), t.ranges.end(),
                   [](const Range& a, const Range& b) { return a.start < b.start; });
  // Without them: read by the caller a piece at a time (allocation_stream.h).
  if (with_allocations && version >= 4)
    readAllocationBatches(r, t, rows);
  else if (with_allocations)
    readAllocationRows(r, t.contexts, rows, [&](const Allocation& a) { t.allocations.push_back(a); });
  readRows(r, "SELECT step, start_ns, end_ns, peak_bytes FROM steps WHERE run=? ORDER BY step", t.steps, nullptr,
           [](Stmt& s) { return Step{s.i64(0), s.i64(1), s.i64(2), s.i64(3)}; });
  readRows(r, "SELECT step, name, value FROM scalars WHERE run=? ORDER BY step, rowid", t.scalars, nullptr,
           [](Stmt& s) { return Scalar{s.i64(0), s.text(1), s.f64(2)}; });
  readRows(r,
           "SELECT rowid, name, device, stream, start_ns, end_ns, correlation, range FROM kernels WHERE run=?"
           " ORDER BY start_ns",
           t.kernels, nullptr, kernelFrom);
  if (progress) progress(total, total);
  return t;
}

}  // namespace gcprof

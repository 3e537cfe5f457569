#include "allocation_stream.h"

#include <algorithm>
#include <optional>

#include "allocation_batch.h"
#include "allocation_row_query.h"
#include "statement.h"
#include "trace_load.h"

namespace gcprof {
namespace {

// The order of a loaded Trace's rows (an object, not a function pointer:
// std::sort and the heap inline it; a call per comparison cost export
// ~0.6 s of 6.5 at 10M rows).
struct Before {
  bool operator()(const Allocation& a, const Allocation& b) const {
    return a.alloc != b.alloc ? a.alloc < b.alloc : a.id < b.id;
  }
};
constexpr Before before{};

// Version 6: the free times of blocks written live, walked beside the rows
// in the same (alloc_ns, id) order, as applyFrees gives them to a loaded run.
class FreeWalk {
 public:
  FreeWalk(sqlite3* db, const std::string& path, int version, int64_t run) {
    if (version < 6) return;
    s_.emplace(db, path, "SELECT alloc_ns, id, free_ns FROM allocation_frees WHERE run=? ORDER BY alloc_ns, id");
    s_->bind(1, run);
    advance();
  }
  // Sets `a`'s free time when a free names it (rows come in key order).
  void apply(Allocation& a) {
    while (has_ && (alloc_ < a.alloc || (alloc_ == a.alloc && id_ < a.id))) advance();
    if (has_ && alloc_ == a.alloc && id_ == a.id) {
      a.free = free_;
      advance();
    }
  }

 private:
  void advance() {
    has_ = s_->step();
    if (has_) s_->columns(alloc_, id_, free_);
  }
  std::optional<Stmt> s_;
  bool has_ = false;
  Ns alloc_ = 0, free_ = -1;
  int64_t id_ = 0;
};

// The batches whose rows are being handed over, each sorted, by their next row.
class OpenBatches {
 public:
  bool empty() const { return heap_.empty(); }
  const Allocation& head() const { return batches_[heap_.front()].next(); }
  // A slot for a batch's rows (its vector keeps the capacity of the last).
  std::vector<Allocation>& slot() {
    if (spare_.empty()) {
      spare_.push_back(batches_.size());
      batches_.emplace_back();
    }
    std::vector<Allocation>& rows = batches_[spare_.back()].rows;
    rows.clear();
    return rows;
  }
  // Opens the slot slot() gave.
  void open() {
    const size_t s = spare_.back();
    spare_.pop_back();
    if (batches_[s].rows.empty()) {
      spare_.push_back(s);
      return;
    }
    batches_[s].at = 0;
    heap_.push_back(s);
    std::push_heap(heap_.begin(), heap_.end(), later());
  }
  // The next row of all, taken.
  Allocation take() {
    std::pop_heap(heap_.begin(), heap_.end(), later());
    const size_t s = heap_.back();
    Batch& b = batches_[s];
    const Allocation a = b.rows[b.at++];
    if (b.at < b.rows.size()) {
      std::push_heap(heap_.begin(), heap_.end(), later());
    } else {
      heap_.pop_back();
      spare_.push_back(s);
    }
    return a;
  }

 private:
  struct Batch {
    std::vector<Allocation> rows;
    size_t at = 0;
    const Allocation& next() const { return rows[at]; }
  };
  // For the std heap functions: a min-heap by next row.
  struct Later {
    const std::vector<Batch>* batches;
    bool operator()(size_t x, size_t y) const { return before((*batches)[y].next(), (*batches)[x].next()); }
  };
  Later later() const { return Later{&batches_}; }
  std::vector<Batch> batches_;
  std::vector<size_t> heap_;   // a min-heap of batches_ by next row
  std::vector<size_t> spare_;  // batches_ not open
};

}  // namespace

AllocationStream::AllocationStream(TraceStore& store, int64_t run, size_t piece_rows)
    : db_(store.handle()),
      path_(store.path()),
      version_(store.schemaVersion()),
      run_(run),
      piece_rows_(std::max<size_t>(1, piece_rows)) {
  if (sqlite3_get_autocommit(db_)) {
    exec(db_, path_, "BEGIN");
    own_transaction_ = true;
  }
  try {
    findBatchStarts();
  } catch (...) {
    if (own_transaction_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

AllocationStream::~AllocationStream() {
  // A read transaction: nothing to keep or lose.
  if (own_transaction_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void AllocationStream::findBatchStarts() {
  if (version_ < 4) return;
  // Version 7 stores where each batch starts; a batch written before (a run
  // an older gcprof recorded into this file) is parsed to learn it. The
  // CASE reads a batch's text only then.
  const char* sql = version_ >= 7 ? "SELECT b.rowid, s.alloc_ns, b.first_id, b.base_ns,"
                                    " CASE WHEN s.alloc_ns IS NULL THEN b.rows END FROM allocation_batches b"
                                    " LEFT JOIN allocation_batch_starts s ON s.run = b.run AND s.first_id = b.first_id"
                                    " WHERE b.run=? ORDER BY b.first_id"
                                  : "SELECT rowid, NULL, first_id, base_ns, rows FROM allocation_batches"
                                    " WHERE run=? ORDER BY first_id";
  Stmt s(db_, path_, sql);
  s.bind(1, run_);
  std::vector<Allocation> rows;
  std::string problem;
  while (s.step()) {
    const int64_t rowid = s.i64(0);
    if (!s.isNull(1)) {
      batches_.push_back(BatchStart{s.i64(1), kStoredStart, rowid});
      continue;
    }
    rows.clear();
    if (!parseBatch(s.textView(4), BatchBase{s.i64(2), s.i64(3)}, rows, contexts_, problem))
      throw damagedBatch(path_, run_, "allocation", s.i64(2), problem);
    if (rows.empty()) continue;
    const Allocation& first = *std::min_element(rows.begin(), rows.end(), before);
    batches_.push_back(BatchStart{first.alloc, first.id, rowid});
  }
  std::sort(batches_.begin(), batches_.end(), [](const BatchStart& a, const BatchStart& b) {
    return a.alloc != b.alloc ? a.alloc < b.alloc : a.id != b.id ? a.id < b.id : a.rowid < b.rowid;
  });
}

void AllocationStream::readBatch(const BatchStart& b, std::vector<Allocation>& out) {
  Stmt s(db_, path_, "SELECT first_id, base_ns, rows FROM allocation_batches WHERE rowid=?");
  s.bind(1, b.rowid);
  std::string problem;
  // Gone since the batches were counted: only outside a transaction of ours.
  if (!s.step()) throw StoreError(path_ + ": run " + std::to_string(run_) + ": an allocation batch changed while read");
  if (!parseBatch(s.textView(2), BatchBase{s.i64(0), s.i64(1)}, out, contexts_, problem))
    throw damagedBatch(path_, run_, "allocation", s.i64(0), problem);
  std::sort(out.begin(), out.end(), before);
  // A stored start that is not the batch's earliest row would hand rows
  // over out of time order, or miss the batch's first ones.
  if (b.id == kStoredStart && (out.empty() || out.front().alloc != b.alloc))
    throw damagedBatch(path_, run_, "allocation", s.i64(0),
                       "allocation_batch_starts says it starts at " + std::to_string(b.alloc) + " ns, its rows at " +
                           (out.empty() ? std::string("none") : std::to_string(out.front().alloc) + " ns"));
}

void AllocationStream::read(const Take& take) {
  AllocationRowQuery own_rows(db_, path_, version_, run_);
  FreeWalk frees(db_, path_, version_, run_);
  OpenBatches open;
  Allocation row;
  bool has_row = own_rows.next(row, contexts_);
  std::vector<Allocation> piece;
  piece.reserve(piece_rows_);
  int64_t count = 0;
  auto hand = [&](Allocation a) {
    frees.apply(a);
    piece.push_back(a);
    ++count;
    if (piece.size() == piece_rows_) {
      take(piece);
      piece.clear();
    }
  };
  size_t next_batch = 0;
  for (;;) {
    const bool from_rows = has_row && (open.empty() || before(row, open.head()));
    const Allocation* head = from_rows ? &row : open.empty() ? nullptr : &open.head();
    // A batch whose earliest row is not after the next row to hand over
    // joins the merge first: none of its rows may come before the ones it
    // holds.
    if (next_batch < batches_.size()) {
      const BatchStart& b = batches_[next_batch];
      if (!head || b.alloc < head->alloc || (b.alloc == head->alloc && b.id <= head->id)) {
        readBatch(b, open.slot());
        open.open();
        ++next_batch;
        continue;
      }
    }
    if (!head) break;
    if (from_rows) {
      hand(row);
      has_row = own_rows.next(row, contexts_);
    } else {
      hand(open.take());
    }
  }
  if (!piece.empty()) take(piece);
  rows_ = count;
}

}  // namespace gcprof

#include "allocation_batch.h"

#include "batch_text.h"

namespace gcprof {
namespace {

using batch_text::Cursor;
using batch_text::problemAt;
using batch_text::writeDecimal;

// id - first_id, addr, bytes, device, stream, thread, api, alloc_ns - base_ns,
// lifetime, range, step, kind
constexpr int kFields = 12;

}  // namespace

bool appendToBatch(std::string& batch, const BatchBase& base, const RecordedAllocation& a) {
  int64_t id, alloc, life = -1;
  if (__builtin_sub_overflow(a.id, base.first_id, &id) ||
      __builtin_sub_overflow(a.alloc, base.base_ns, &alloc))
    return false;
  if (a.free >= 0 && (__builtin_sub_overflow(a.free, a.alloc, &life) || life < 0)) return false;
  if (a.free < -1) return false;  // only -1 means live
  const int64_t v[kFields] = {id,       static_cast<int64_t>(a.addr), a.bytes, a.device,
                              a.stream, a.thread,  a.api,   alloc,
                              life,     a.range,   a.step,  a.kind};
  // One append per row: the storm's writer spent a sixth of its time in
  // per-number appends (bench/history/recording-overhead.md).
  char row[kFields * 21 + 4];  // 20 characters per int64, the separators, ",[" and "]"
  char* p = row;
  if (batch.size() > 1) *p++ = ',';
  *p++ = '[';
  for (int i = 0; i < kFields; ++i) {
    if (i) *p++ = ',';
    p = writeDecimal(p, row + sizeof row, v[i]);
  }
  *p++ = ']';
  batch.append(row, p);
  return true;
}

namespace {

// One row's twelve numbers, "[...]" included.
template <bool Bounded>
bool parseRow(Cursor& c, int64_t (&v)[kFields]) {
  if (!c.take('[')) return false;
  for (int i = 0; i < kFields; ++i)
    if ((i && !c.take(',')) || !c.integer<Bounded>(v[i])) return false;
  return c.take(']');
}

// The row `v` relative to `base`; false when a field is out of range.
bool rowFrom(const int64_t (&v)[kFields], const BatchBase& base, RecordedAllocation& a, const char*& why) {
  if (__builtin_add_overflow(base.first_id, v[0], &a.id) || __builtin_add_overflow(base.base_ns, v[7], &a.alloc) ||
      v[8] < -1 || (v[8] >= 0 && __builtin_add_overflow(a.alloc, v[8], &a.free))) {
    why = "a row out of range";
    return false;
  }
  if (v[8] < 0) a.free = -1;
  if (!setNarrowFields(a, v[9], v[10], v[3], v[6], v[11])) {
    why = "a range, step, device, api or kind out of range";
    return false;
  }
  a.addr = static_cast<uint64_t>(v[1]);
  a.bytes = v[2];
  a.stream = v[4];
  a.thread = v[5];
  return true;
}

// parseBatch, each row given to `add`.
template <bool Bounded, typename Add>
bool parseRows(std::string_view text, const BatchBase& base, std::string& problem, Add add) {
  Cursor c{text.data(), text.data(), text.data() + text.size()};
  auto failed = [&]() {
    problem = problemAt(c);
    return false;
  };
  if (!c.take('[')) return failed();
  if (!(c.p < c.end && *c.p == ']')) {  // not an empty batch (never written, but valid)
    for (;;) {
      int64_t v[kFields];
      if (!parseRow<Bounded>(c, v)) return failed();
      RecordedAllocation a;
      if (!rowFrom(v, base, a, c.why)) {
        c.fault = c.p;
        c.before = true;
        return failed();
      }
      add(a);
      if (c.p < c.end && *c.p == ',') {
        ++c.p;
        continue;
      }
      break;
    }
  }
  if (!c.take(']')) return failed();
  if (c.p != c.end) {
    c.fail("text after the batch");
    return failed();
  }
  return true;
}

// parseRows, unbounded where the text ends in ']' (as a whole batch does):
// then neither a run of digits nor a '-' before one reaches the end.
template <typename Add>
bool parseAnyRows(std::string_view text, const BatchBase& base, std::string& problem, Add add) {
  if (!text.empty() && text.back() == ']')
    return parseRows<false>(text, base, problem, add);
  return parseRows<true>(text, base, problem, add);
}

}  // namespace

bool parseBatch(std::string_view text, const BatchBase& base, std::vector<RecordedAllocation>& out,
                std::string& problem) {
  return parseAnyRows(text, base, problem, [&](const RecordedAllocation& a) { out.push_back(a); });
}

bool parseBatch(std::string_view text, const BatchBase& base, AllocationBlocks& out, AllocationContexts& contexts,
                std::string& problem) {
  return parseAnyRows(text, base, problem, [&](const RecordedAllocation& a) {
    Allocation row = a;
    row.context = contexts.intern({a.stream, a.thread});
    out.append(row);
  });
}

bool parseBatch(std::string_view text, const BatchBase& base, std::vector<Allocation>& out,
                AllocationContexts& contexts, std::string& problem) {
  return parseAnyRows(text, base, problem, [&](const RecordedAllocation& a) {
    Allocation row = a;
    row.context = contexts.intern({a.stream, a.thread});
    out.push_back(row);
  });
}

}  // namespace gcprof

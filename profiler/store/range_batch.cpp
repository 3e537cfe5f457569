#include "range_batch.h"

#include <climits>

#include "batch_text.h"

namespace gcprof {
namespace {

using batch_text::Cursor;
using batch_text::writeDecimal;

// The integers after the name: domain, phase, thread, depth, parent,
// start_ns - base_ns, end_ns - start_ns, step, device_ns, input_bytes,
// output_bytes.
constexpr int kNumbers = 11;

// A name as a JSON string: '"' and '\' escaped, control characters as \u00XX
// (JSON allows no raw ones); the rest, valid UTF-8, as it is.
void appendName(std::string& batch, const std::string& name) {
  batch.push_back('"');
  size_t plain = 0;  // the start of the bytes not yet appended
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    batch.append(name, plain, i - plain);
    plain = i + 1;
    if (c == '"' || c == '\\') {
      batch.push_back('\\');
      batch.push_back(static_cast<char>(c));
    } else {
      const char hex[] = "0123456789abcdef";
      const char escaped[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      batch.append(escaped, sizeof escaped);
    }
  }
  batch.append(name, plain, std::string::npos);
  batch.push_back('"');
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits after "\u"; -1 when they are not.
int32_t codeUnit(const char* p, const char* end) {
  if (end - p < 4) return -1;
  int32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    int d = hexDigit(p[i]);
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// One JSON escape after its '\' (what this writer writes, and what SQLite's
// json functions write into a batch edited by hand).
bool escape(Cursor& c, std::string& out) {
  if (c.p == c.end) return c.fail("a cut escape");
  const char e = *c.p++;
  switch (e) {
    case '"': case '\\': case '/': out.push_back(e); return true;
    case 'b': out.push_back('\b'); return true;
    case 'f': out.push_back('\f'); return true;
    case 'n': out.push_back('\n'); return true;
    case 'r': out.push_back('\r'); return true;
    case 't': out.push_back('\t'); return true;
    case 'u': break;
    default: return c.fail("an unknown escape");
  }
  int32_t cp = codeUnit(c.p, c.end);
  if (cp < 0) return c.fail("a bad \\u escape");
  c.p += 4;
  if (cp >= 0xd800 && cp < 0xdc00) {  // a surrogate pair
    int32_t low = c.end - c.p >= 2 && c.p[0] == '\\' && c.p[1] == 'u' ? codeUnit(c.p + 2, c.end) : -1;
    if (low < 0xdc00 || low >= 0xe000) return c.fail("a lone surrogate");
    c.p += 6;
    cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
  } else if (cp >= 0xdc00 && cp < 0xe000) {
    return c.fail("a lone surrogate");
  }
  appendUtf8(out, static_cast<uint32_t>(cp));
  return true;
}

bool name(Cursor& c, std::string& out) {
  if (!c.take('"')) return false;
  for (;;) {
    const char* q = c.p;
    while (q < c.end && *q != '"' && *q != '\\') ++q;
    out.append(c.p, q);
    c.p = q;
    if (q == c.end) return c.fail("a name without its closing '\"'");
    ++c.p;
    if (*q == '"') return true;
    if (!escape(c, out)) return false;
  }
}

// One row, "[...]" included, into `r` (its id and times still relative).
template <bool Bounded>
bool parseRow(Cursor& c, int64_t& id, Range& r, int64_t (&v)[kNumbers]) {
  if (!c.take('[') || !c.integer<Bounded>(id) || !c.take(',') || !name(c, r.name)) return false;
  for (int i = 0; i < kNumbers; ++i)
    if (!c.take(',') || !c.integer<Bounded>(v[i])) return false;
  return c.take(']');
}

bool fitsInt(int64_t v) { return v >= INT_MIN && v <= INT_MAX; }

// The numbers of a row relative to `base` into `r`; false when a field is
// out of range.
bool rowFrom(int64_t id, const int64_t (&v)[kNumbers], const BatchBase& base, Range& r) {
  if (__builtin_add_overflow(base.first_id, id, &r.id) || __builtin_add_overflow(base.base_ns, v[5], &r.start) ||
      __builtin_add_overflow(r.start, v[6], &r.end) || !fitsInt(v[0]) || !fitsInt(v[1]) || !fitsInt(v[3]))
    return false;
  r.domain = static_cast<RangeDomain>(v[0]);
  r.phase = static_cast<Phase>(v[1]);
  r.thread = v[2];
  r.depth = static_cast<int>(v[3]);
  r.parent = v[4];
  r.step = v[7];
  r.device_ns = v[8];
  r.input_bytes = v[9];
  r.output_bytes = v[10];
  return true;
}

template <bool Bounded>
bool parseRows(std::string_view text, const BatchBase& base, std::vector<Range>& out, std::string& problem) {
  Cursor c{text.data(), text.data(), text.data() + text.size()};
  auto failed = [&]() {
    problem = batch_text::problemAt(c);
    return false;
  };
  if (!c.take('[')) return failed();
  if (!(c.p < c.end && *c.p == ']')) {
    for (;;) {
      Range r;
      int64_t id, v[kNumbers];
      if (!parseRow<Bounded>(c, id, r, v)) return failed();
      if (!rowFrom(id, v, base, r)) {
        c.fail("a row out of range");
        c.before = true;
        return failed();
      }
      out.push_back(std::move(r));
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

}  // namespace

bool appendToBatch(std::string& batch, const BatchBase& base, const Range& r) {
  int64_t id, start, length;
  if (__builtin_sub_overflow(r.id, base.first_id, &id) || __builtin_sub_overflow(r.start, base.base_ns, &start) ||
      __builtin_sub_overflow(r.end, r.start, &length))
    return false;
  char head[26];  // ",[", an int64 and ','
  char* p = head;
  if (batch.size() > 1) *p++ = ',';
  *p++ = '[';
  p = writeDecimal(p, head + sizeof head, id);
  *p++ = ',';
  batch.append(head, p);
  appendName(batch, r.name);
  const int64_t v[kNumbers] = {static_cast<int64_t>(r.domain), static_cast<int64_t>(r.phase), r.thread, r.depth,
                               r.parent, start, length, r.step, r.device_ns, r.input_bytes, r.output_bytes};
  char tail[kNumbers * 21 + 2];  // ',' and 20 characters per int64, then ']'
  p = tail;
  for (int64_t x : v) {
    *p++ = ',';
    p = writeDecimal(p, tail + sizeof tail, x);
  }
  *p++ = ']';
  batch.append(tail, p);
  return true;
}

bool parseRangeBatch(std::string_view text, const BatchBase& base, std::vector<Range>& out, std::string& problem) {
  // Ending in ']' (as a whole batch does), no run of digits reaches the end.
  if (!text.empty() && text.back() == ']') return parseRows<false>(text, base, out, problem);
  return parseRows<true>(text, base, out, problem);
}

}  // namespace gcprof

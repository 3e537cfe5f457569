#include "heap_walk.h"

#include <fcntl.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace gcprof::inject {
namespace {

// A chunk's header: prev_size, then size | flags; the user's block follows.
constexpr uint64_t kHeader = 16;
constexpr uint64_t kPrevInUse = 1, kIsMmapped = 2, kFlags = 7;
// glibc's HEAP_MAX_SIZE on 64-bit (2 * DEFAULT_MMAP_THRESHOLD_MAX): the other
// arenas' heaps are mappings aligned to it.
constexpr uint64_t kArenaHeapAlign = 64ull << 20;
// heap_info is 32 bytes, 48 since glibc 2.35; the first heap of an arena
// holds the arena (malloc_state, ~2.2 KiB) right after it.
constexpr uint64_t kHeapInfoSizes[] = {32, 48};
constexpr uint64_t kArenaStateMin = 2048, kArenaStateMax = 2432;
// memalign of an mmapped block leaves this much (at most) before its chunk.
constexpr uint64_t kMaxLead = 4096;
// Pages of anonymous memory that start no mmapped chunk (thread stacks, ...)
// looked at in one walk: 1 GiB.
constexpr uint64_t kMaxScanPages = 262144;
constexpr uint64_t kWindow = 1 << 20;
// Reads of a heap that changed under them, before it is given up: 2 ms
// apart, then twice as long each time up to 100 ms (~1.5 s in all).
constexpr int kAttempts = 20;
constexpr long kMaxPauseNs = 100000000;
// Times one walk of the main arena follows its top to a moved break.
constexpr int kMaxBreakMoves = 64;
// Chains broken by a concurrent change and mended by reading again, in one walk.
constexpr int kMaxRereads = 4096;

// Pages of our own: growable, never from malloc.
struct Pages {
  void* p = nullptr;
  size_t len = 0;
  bool reserve(size_t want) {
    if (want <= len) return true;
    size_t n = std::max(want, len * 2);
    n = (n + 4095) & ~size_t{4095};
    void* q = p ? mremap(p, len, n, MREMAP_MAYMOVE) : mmap(nullptr, n, PROT_READ | PROT_WRITE,
                                                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return false;
    p = q;
    len = n;
    return true;
  }
  void release() {
    if (p) munmap(p, len);
    p = nullptr;
    len = 0;
  }
};

// Where the main arena ends now: its top chunk ends at the break.
uint64_t currentBreak() { return reinterpret_cast<uint64_t>(sbrk(0)); }

// Our own memory, read so that a mapping gone meanwhile is an error, not a fault.
bool readMemory(uint64_t addr, void* into, size_t len) {
  iovec local{into, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

uint64_t word(const uint8_t* snap, uint64_t offset) {
  uint64_t v;
  std::memcpy(&v, snap + offset, sizeof v);
  return v;
}

struct Region {
  uint64_t start = 0, end = 0;
  bool brk_heap = false;  // [heap]: the main arena
};

uint64_t hex(const char*& s) {
  uint64_t v = 0;
  for (;; ++s) {
    char c = *s;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return v;
    v = v * 16 + static_cast<uint64_t>(d);
  }
}

// Readable, writable private mappings that are anonymous or [heap]: where
// malloc's memory is. Parsed from /proc/self/maps into `out` (our pages).
size_t readRegions(Pages& text, Pages& out) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t used = 0;
  for (;;) {
    if (!text.reserve(used + 65536)) break;
    ssize_t n = read(fd, static_cast<char*>(text.p) + used, text.len - used - 1);
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  if (!text.p) return 0;
  static_cast<char*>(text.p)[used] = '\0';
  size_t count = 0;
  for (const char* s = static_cast<const char*>(text.p); *s;) {
    const char* line_end = std::strchr(s, '\n');
    if (!line_end) line_end = s + std::strlen(s);
    Region r;
    r.start = hex(s);
    if (*s == '-') ++s;
    r.end = hex(s);
    bool rw = std::strncmp(s, " rw-p ", 6) == 0;
    // The path is the sixth field; anonymous mappings have none.
    int fields = 0;
    const char* path = s;
    while (path < line_end && fields < 4) {
      while (path < line_end && *path == ' ') ++path;
      while (path < line_end && *path != ' ') ++path;
      ++fields;
    }
    while (path < line_end && *path == ' ') ++path;
    size_t path_len = static_cast<size_t>(line_end - path);
    r.brk_heap = path_len == 6 && std::strncmp(path, "[heap]", 6) == 0;
    if (rw && (path_len == 0 || r.brk_heap) && r.end > r.start &&
        out.reserve((count + 1) * sizeof(Region)))
      static_cast<Region*>(out.p)[count++] = r;
    s = *line_end ? line_end + 1 : line_end;
  }
  return count;
}

}  // namespace

// Memory read a window at a time: chunk headers are looked up one by one,
// and one read serves all those within a window (big chunks are jumped over
// unread).
class Window {
 public:
  ~Window() { pages_.release(); }
  void reset() { start_ = end_ = 0; }
  // The `len` bytes at addr, none of them past `limit`; null if unreadable.
  const uint8_t* at(uint64_t addr, uint64_t len, uint64_t limit) {
    if (addr < start_ || addr + len > end_) {
      uint64_t want = std::min(std::max(kWindow, len), limit - addr);
      if (want < len || !pages_.reserve(want) || !readMemory(addr, pages_.p, want)) {
        start_ = end_ = 0;
        return nullptr;
      }
      start_ = addr;
      end_ = addr + want;
    }
    return static_cast<const uint8_t*>(pages_.p) + (addr - start_);
  }

 private:
  Pages pages_;
  uint64_t start_ = 0, end_ = 0;
};

struct HeapWalkBuilder {
  HeapWalk& walk;
  int64_t min_bytes;
  Window window;
  uint64_t scanned_pages = 0;

  // The size word of the chunk at c (its flags included).
  bool head(uint64_t c, uint64_t end, uint64_t& out) {
    const uint8_t* h = window.at(c, kHeader, end);
    if (!h) return false;
    out = word(h, 8);
    return true;
  }

  // Chunks of one arena region: from `first`, each size leads to the next,
  // up to the top chunk, which must end at `end` (or within the last page's
  // slack of [heap], whose mapping is rounded up). A chunk is in use when
  // the next one's PREV_INUSE bit is set. Where the chain breaks (a thread
  // split or merged chunks since they were read), the walk goes back a few
  // chunks, reads them again, fresh, and goes on from there. The blocks are
  // kept only if the walk lands where it must.
  bool walkArena(uint64_t first, uint64_t end, uint64_t slack, bool follows_break = false) {
    size_t mark = walk.size_;
    int break_moves = 0;
    // The last chunks passed, each with the block count before it.
    constexpr int kBack = 16;
    uint64_t back_chunk[kBack];
    size_t back_size[kBack];
    int back_n = 0, back_at = 0;
    int rereads = 0;
    for (uint64_t c = first;;) {
      uint64_t h = 0, size = 0, next = 0, next_head = 0;
      bool ok = c + kHeader <= end && head(c, end, h);
      if (ok) {
        size = h & ~kFlags;
        // Size 0: the fencepost that ends an old heap, or [heap]'s zeros past its top.
        if (size == 0 && end - c <= std::max(slack, kHeader)) return true;
        ok = size >= kHeader && size % 16 == 0 && !(h & kIsMmapped) && c + size <= end;
        next = c + size;
      }
      if (ok && next + kHeader > end) {  // c is the top chunk, free
        if (end - next <= slack) return true;
        ok = false;
      }
      if (ok) ok = head(next, end, next_head);
      if (!ok && follows_break && break_moves < kMaxBreakMoves) {
        // The main arena's top moves with the break (the job's threads grow
        // and trim it between two steps): read this chunk against where the
        // break is now before taking the chain for broken.
        uint64_t now = currentBreak();
        if (now != end) {
          end = now;
          ++break_moves;
          window.reset();
          continue;
        }
      }
      if (!ok) {
        if (back_n == 0 || ++rereads > kMaxRereads) break;
        int oldest = (back_at - back_n + kBack) % kBack;
        c = back_chunk[oldest];
        walk.size_ = back_size[oldest];
        back_n = 0;
        window.reset();
        continue;
      }
      back_chunk[back_at] = c;
      back_size[back_at] = walk.size_;
      back_at = (back_at + 1) % kBack;
      back_n = std::min(back_n + 1, kBack);
      int64_t usable = static_cast<int64_t>(size - 8);
      if ((next_head & kPrevInUse) && usable >= min_bytes) walk.push(c + kHeader, usable);
      c = next;
    }
    walk.size_ = mark;
    return false;
  }

  // A region the job's threads changed while it was read does not walk to
  // its end: read it again, a moment apart, the moments longer each time so
  // that a job busy allocating for a while (a step's backward) is waited out.
  template <typename Walk>
  void walkRegion(Walk walk_once) {
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      if (attempt > 0) {
        window.reset();
        timespec pause{0, std::min(2000000L << (attempt - 1), kMaxPauseNs)};
        nanosleep(&pause, nullptr);
      }
      if (walk_once()) {
        ++walk.regions_walked;
        return;
      }
    }
    ++walk.regions_skipped;
  }

  void mainArena(const Region& r) {
    // The first chunk sits at the start of the break, moved up to alignment;
    // the top chunk ends at the break, wherever it is now.
    walkRegion([&] {
      uint64_t end = currentBreak();
      if (end <= r.start) end = r.end;
      for (uint64_t lead = 0; lead < 64; lead += 16)
        if (walkArena(r.start + lead, end, 4096, true)) return true;
      return false;
    });
  }

  // An other arena's heap starts with heap_info: {arena, prev, size,
  // mprotect_size, ...}; false if r is none.
  static bool heapInfo(const Region& r, uint64_t& arena, uint64_t& size) {
    uint64_t info[4];
    if (r.start % kArenaHeapAlign != 0 || !readMemory(r.start, info, sizeof info)) return false;
    arena = info[0];
    size = info[2];
    uint64_t mprotect_size = info[3];
    return size >= 4096 && mprotect_size >= size && mprotect_size <= kArenaHeapAlign && arena != 0;
  }

  // The chunks of an other arena's heap, up to heap_info.size.
  bool arenaHeap(const Region& r) {
    uint64_t arena = 0, size = 0;
    if (!heapInfo(r, arena, size)) return false;
    bool first_heap = arena > r.start && arena < r.start + 64;
    walkRegion([&] {
      // Read again at each attempt: the heap grows and shrinks.
      if (!heapInfo(r, arena, size)) return false;
      uint64_t end = r.start + size;
      if (first_heap) {
        for (uint64_t c = (arena + kArenaStateMin) & ~uint64_t{15}; c <= arena + kArenaStateMax; c += 16)
          if (walkArena(c, end, 0)) return true;
      } else {
        for (uint64_t info_size : kHeapInfoSizes)
          if (walkArena(r.start + info_size, end, 0)) return true;
      }
      return false;
    });
    return true;
  }

  // mmapped chunks in an anonymous mapping: each starts a page (adjacent ones
  // share a mapping line, and so may a thread's stack below them). A plain one
  // starts its page (prev_size 0); memalign's starts `lead` bytes in, with
  // prev_size = lead: that one is the block, the stale header at the page's
  // start is not. Pages that start no chunk are passed one by one, up to
  // kMaxScanPages in a walk.
  void mmappedChunks(const Region& r) {
    uint64_t page_size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    for (uint64_t pos = r.start; pos + kHeader <= r.end;) {
      uint64_t len = std::min<uint64_t>(kMaxLead + kHeader, r.end - pos);
      const uint8_t* page = window.at(pos, len, r.end);
      if (!page) return;
      uint64_t found = 0, found_size = 0;
      for (uint64_t lead = 0; lead + kHeader <= len; lead += 16) {
        uint64_t prev = word(page, lead), h = word(page, lead + 8), size = h & ~kFlags;
        if (prev != lead || (h & kFlags) != kIsMmapped || size < kHeader) continue;
        if ((lead + size) % page_size != 0 || pos + lead + size > r.end) continue;
        if (lead > 0 || found_size == 0) {
          found = lead;
          found_size = size;
        }
        if (lead > 0) break;
      }
      if (found_size == 0) {
        if (++scanned_pages > kMaxScanPages) return;
        pos += page_size;
        continue;
      }
      int64_t usable = static_cast<int64_t>(found_size - kHeader);
      if (usable >= min_bytes) {
        walk.push(pos + found + kHeader, usable);
        ++walk.mmapped;
      }
      pos += found + found_size;
    }
  }
};

HeapWalk::HeapWalk(int64_t min_bytes) {
  Pages text, regions;
  HeapWalkBuilder b{*this, min_bytes, {}, 0};
  size_t n = readRegions(text, regions);
  for (size_t i = 0; i < n; ++i) {
    const Region& r = static_cast<const Region*>(regions.p)[i];
    if (r.brk_heap)
      b.mainArena(r);
    else if (!b.arenaHeap(r))
      b.mmappedChunks(r);
  }
  text.release();
  regions.release();
  std::sort(blocks_, blocks_ + size_,
            [](const HeapBlock& a, const HeapBlock& c) { return a.addr < c.addr; });
}

HeapWalk::~HeapWalk() {
  if (blocks_) munmap(blocks_, capacity_ * sizeof(HeapBlock));
}

void HeapWalk::push(uint64_t addr, int64_t bytes) {
  if (size_ == capacity_) {
    Pages p{blocks_, capacity_ * sizeof(HeapBlock)};
    if (!p.reserve((capacity_ + 4096) * sizeof(HeapBlock))) return;
    blocks_ = static_cast<HeapBlock*>(p.p);
    capacity_ = p.len / sizeof(HeapBlock);
  }
  blocks_[size_++] = {addr, bytes};
}

bool stillHeld(const HeapBlock& b) {
  uint64_t header[2];
  if (b.addr < kHeader || !readMemory(b.addr - kHeader, header, sizeof header)) return false;
  uint64_t size = header[1] & ~kFlags;
  if (header[1] & kIsMmapped) return size == static_cast<uint64_t>(b.bytes) + kHeader;
  uint64_t next[2];
  if (size != static_cast<uint64_t>(b.bytes) + 8 ||
      !readMemory(b.addr - kHeader + size, next, sizeof next) || !(next[1] & kPrevInUse))
    return false;
  if (header[1] & kPrevInUse) return true;
  // The chunk before is free. Freed between two free chunks, the block was
  // merged into the one before and its header, and the next one's in-use
  // bit, are left as they were: then only the chunk before tells, grown
  // past the size the block's header gives it (an attached resnet's
  // baseline kept 3.5 MB of gradients freed by zero_grad this way).
  uint64_t prev_size = header[0], prev[2];
  return prev_size >= kHeader && prev_size <= b.addr - kHeader &&
         readMemory(b.addr - kHeader - prev_size, prev, sizeof prev) &&
         (prev[1] & ~kFlags) == prev_size;
}

bool HeapWalk::contains(const HeapBlock& b) const {
  const HeapBlock* it = std::lower_bound(
      begin(), end(), b.addr, [](const HeapBlock& x, uint64_t a) { return x.addr < a; });
  return it != end() && it->addr == b.addr && it->bytes == b.bytes;
}

bool HeapWalk::containsAddress(uint64_t addr) const {
  const HeapBlock* it = std::lower_bound(
      begin(), end(), addr, [](const HeapBlock& x, uint64_t a) { return x.addr < a; });
  return it != end() && it->addr == addr;
}

}  // namespace gcprof::inject

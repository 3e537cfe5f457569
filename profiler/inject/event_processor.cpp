#include "event_processor.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "address_key.h"
#include "config.h"
#include "recorder.h"
#include "run_metadata.h"

namespace gcprof::inject {
namespace {

// Freed blocks of a process that has not shown it is a training process yet
// (no run opened): at most this many are held (~6 MiB); beyond, the root
// process and the ranks it launched open their runs and write as they go,
// others count them dropped (docs/recording.md, "Cost").
constexpr size_t kMaxPending = 1 << 16;

uint64_t key(uint64_t addr, int device, int kind) { return addressKey(addr, device, kind); }

// A segment PyTorch's allocator reports over the raw allocation CUPTI saw
// for the same memory: the allocator's row is the one kept.
bool replacesRawSegment(const gcprof::RecordedAllocation& mine, const gcprof::RecordedAllocation& live) {
  return mine.api == kApiC10CachingAllocator && live.api != kApiC10CachingAllocator &&
         live.kind == static_cast<int>(gcprof::AllocKind::Segment) && live.id == 0;
}

int moduleDepth(const char* name) {
  if (!*name) return 0;
  int d = 1;
  for (const char* p = name; *p; ++p) d += *p == '.';
  return d;
}

}  // namespace

EventProcessor::EventProcessor(const std::string& db, bool root) : db_(db), root_(root) {
  // Until a --steps window or `gcprof ctl pause` says otherwise, we record
  // from the start.
  const Config& c = config();
  if (c.steps_from < 0 && !c.start_paused) windows_.push_back({INT64_MIN, INT64_MAX});
}

void EventProcessor::ensureRun() {
  if (writer_) return;
  writer_ = std::make_unique<gcprof::RunWriter>(db_);
  // The root's run was made by `gcprof record` (so that it exists even when
  // the job dies early); the same process after an exec keeps using it.
  if (root_ && config().run_id > 0) writer_->selectRun(config().run_id);
  else writer_->createRun(describeThisProcess());
  for (const gcprof::RecordedAllocation& a : pending_) writer_->add(a);
  pending_.clear();
  pending_.shrink_to_fit();
}

void EventProcessor::commit(Ns now) {
  writeLongLived(now);
  if (!writer_) return;
  writer_->commit();
}

void EventProcessor::writeLongLived(Ns now) {
  // By the clock: a job that allocates and then idles (a rank hung in a
  // collective) sends no later event to measure the age by, and is killed.
  Ns cutoff = std::max(now, last_time_) - kLiveWriteAgeNs;
  while (!unwritten_.empty() && unwritten_.front().second < cutoff) {
    auto [k, when] = unwritten_.front();
    unwritten_.pop_front();
    gcprof::RecordedAllocation* found = live_.find(k);
    if (!found || found->alloc != when || found->id != 0) continue;
    gcprof::RecordedAllocation& a = *found;
    if (!inSomeWindow(a.alloc, -1)) continue;  // paused: written at its free if a window opens
    // The process `gcprof record` started always has a run; others keep
    // their blocks pending until they show they are training processes.
    if (!writer_ && root_) ensureRun();
    if (!writer_) continue;
    a.id = writer_->addLive(a);
  }
}

bool EventProcessor::inSomeWindow(Ns alloc, Ns free) const {
  for (const auto& w : windows_)
    if (alloc < w.second && (free < 0 || free > w.first)) return true;
  return false;
}

void EventProcessor::keep(const gcprof::RecordedAllocation& a) {
  if (a.id > 0) {  // written while live
    if (a.freed()) writer_->setFree(a);
    return;
  }
  if (!inSomeWindow(a.alloc, a.free)) return;
  if (writer_) {
    writer_->add(a);
  } else if (pending_.size() < kMaxPending) {
    pending_.push_back(a);
  } else if (root_ || config().rank_of_root) {
    ensureRun();  // a long job that marks nothing, a rank importing torch: write as we go
    writer_->add(a);
  } else {
    ++dropped_pending_;
  }
}

void EventProcessor::track(const gcprof::RecordedAllocation& a, int sign) {
  int space = a.device >= 0 ? 1 : 0;
  saw_device_ |= space == 1;
  live_bytes_[space] += sign * a.bytes;
  step_peak_[space] = std::max(step_peak_[space], live_bytes_[space]);
}

void EventProcessor::onAlloc(const Stamped& s) {
  gcprof::RecordedAllocation a;
  a.addr = s.e.a;
  a.bytes = s.e.b;
  a.range = s.e.c;
  a.stream = s.e.d;
  a.api = s.e.api;
  a.kind = s.e.kind;
  a.device = s.e.device;
  a.thread = s.tid;
  a.alloc = s.e.time;
  a.step = stepAt(a.alloc);
  auto [old, fresh] = live_.tryEmplace(key(a.addr, a.device, a.kind), a);
  if (!fresh && replacesRawSegment(a, *old)) {
    track(*old, -1);
    *old = a;
  } else if (!fresh) {
    // Its free is still in flight from another thread: close the old one here.
    old->free = a.alloc;
    keep(*old);
    track(*old, -1);
    *old = a;
  }
  unwritten_.push_back({key(a.addr, a.device, a.kind), a.alloc});
  track(a, +1);
}

void EventProcessor::onFree(const Stamped& s) {
  const uint64_t k = key(s.e.a, s.e.device, s.e.kind);
  gcprof::RecordedAllocation* a = live_.find(k);
  if (!a) {
    ++unmatched_frees_;
    return;
  }
  a->free = s.e.time;
  keep(*a);
  track(*a, -1);
  live_.erase(k);
}

void EventProcessor::onRangeStart(const Stamped& s) {
  ensureRun();
  gcprof::Range r;
  r.id = static_cast<int64_t>(s.e.a);
  r.name = reinterpret_cast<const char*>(s.e.b);
  r.phase = static_cast<gcprof::Phase>(s.e.c & 0xff);
  r.domain = static_cast<gcprof::RangeDomain>((s.e.c >> 8) & 0xff);
  r.thread = s.tid;
  r.parent = s.e.d;
  r.start = r.end = s.e.time;
  r.step = step_;
  r.depth = r.domain == gcprof::RangeDomain::Module ? moduleDepth(r.name.c_str()) : 0;
  open_ranges_.emplace(s.e.a, std::move(r));
}

void EventProcessor::onRangeEnd(const Stamped& s) {
  auto it = open_ranges_.find(s.e.a);
  if (it == open_ranges_.end()) return;  // started before the window
  it->second.end = s.e.time;
  writer_->add(it->second);
  open_ranges_.erase(it);
}

void EventProcessor::noteStepStart(Ns time, int64_t step) {
  // Records come at most a few CUPTI flush periods late: older boundaries
  // are no longer needed (bounded memory on a long job).
  if (step_starts_.size() >= kKeptStepStarts)
    step_starts_.erase(step_starts_.begin(), step_starts_.begin() + kKeptStepStarts / 2);
  step_starts_.push_back({time, step});
}

int64_t EventProcessor::stepAt(Ns time) const {
  if (step_starts_.empty() || time >= step_starts_.back().first) return step_;
  auto after = std::upper_bound(step_starts_.begin(), step_starts_.end(), time,
                                [](Ns t, const std::pair<Ns, int64_t>& s) { return t < s.first; });
  return after == step_starts_.begin() ? -1 : std::prev(after)->second;
}

void EventProcessor::process(It begin, It end) {
  for (It i = begin; i != end; ++i) {
    const Stamped& s = *i;
    last_time_ = s.e.time;
    switch (s.e.type) {
      case EventType::Alloc: onAlloc(s); break;
      case EventType::Free: onFree(s); break;
      case EventType::RangeStart: onRangeStart(s); break;
      case EventType::RangeEnd: onRangeEnd(s); break;
      case EventType::RangeIO: {
        auto it = open_ranges_.find(s.e.a);
        if (it != open_ranges_.end()) {
          it->second.input_bytes = s.e.b;
          it->second.output_bytes = s.e.c;
        }
        break;
      }
      case EventType::StepBegin:
        ensureRun();
        step_ = static_cast<int64_t>(s.e.a);
        step_start_ = s.e.time;
        noteStepStart(step_start_, step_);
        in_step_ = true;
        step_peak_[0] = live_bytes_[0];
        step_peak_[1] = live_bytes_[1];
        break;
      case EventType::StepEnd:
        if (in_step_ && writer_)
          writer_->add(gcprof::Step{step_, step_start_, s.e.time, step_peak_[saw_device_ ? 1 : 0]});
        in_step_ = false;
        break;
      case EventType::Scalar: {
        ensureRun();
        double v;
        std::memcpy(&v, &s.e.c, sizeof v);
        writer_->add(gcprof::Scalar{static_cast<int64_t>(s.e.a), reinterpret_cast<const char*>(s.e.b), v});
        break;
      }
      case EventType::Kernel: {
        if (!writer_) break;
        gcprof::Kernel k;
        k.name = reinterpret_cast<const char*>(s.e.b);
        k.device = s.e.device;
        k.stream = s.e.stream32;
        k.start = s.e.time;
        k.end = static_cast<Ns>(s.e.a);
        k.correlation = s.e.c;
        k.range = s.e.d;
        writer_->add(k);
        break;
      }
      case EventType::WindowOpen:
        if (windows_.empty() || windows_.back().second != INT64_MAX)
          windows_.push_back({s.e.time, INT64_MAX});
        break;
      case EventType::WindowClose:
        if (!windows_.empty() && windows_.back().second == INT64_MAX)
          windows_.back().second = s.e.time;
        break;
      case EventType::Thread:  // consumed by the writer's drain (thread_state.h)
        break;
    }
  }
}

void EventProcessor::closeAll(Ns end, Ns free_live) {
  for (auto& [id, r] : open_ranges_) {
    r.end = end;
    writer_->add(r);
  }
  open_ranges_.clear();
  if (in_step_) writer_->add(gcprof::Step{step_, step_start_, end, step_peak_[saw_device_ ? 1 : 0]});
  in_step_ = false;
  live_.forEach([&](gcprof::RecordedAllocation& a) {
    a.free = free_live;
    keep(a);
  });
  live_.clear();
  unwritten_.clear();
  live_bytes_[0] = live_bytes_[1] = 0;
}

void EventProcessor::endImage(const Counters& c, const char* backend, const char* runtime) {
  // A shell that execs the job (`sh -c 'exec python3 train.py'`) has
  // nothing to write: it need not open the trace.
  bool nothing = live_.empty() && pending_.empty() && open_ranges_.empty() && !in_step_;
  if (!writer_ && root_ && !nothing) ensureRun();
  if (!writer_) {  // another process that marked nothing: as at its exit, no run
    live_.clear();
    unwritten_.clear();
    pending_.clear();
    return;
  }
  if (!root_) {
    // The exec'd program is a process of its own to the trace (it gets its
    // own run if it trains); this image's run ends here.
    finish("complete", 0, c, backend, runtime);
    return;
  }
  // The root's run goes on in the exec'd image: what this image held is
  // freed by the exec, not live for the rest of the run.
  Ns end = std::max(last_time_, nowNs());
  closeAll(end, end);
  writer_->commit();
}

void EventProcessor::finish(const char* status, int exit_code, const Counters& c,
                            const char* backend, const char* runtime) {
  if (!writer_) {
    if (!root_) return;  // a shell or launcher that marked nothing: no run
    ensureRun();
  }
  Ns end = std::max(last_time_, nowNs());
  closeAll(end, -1);  // still live at exit: free = -1
  writer_->commit();
  writer_->attributeKernelTime();
  gcprof::RunInfo info;
  info.status = status;
  info.exit_code = exit_code;
  info.ended = end;
  info.small_allocs = c.small_allocs;
  info.small_bytes = c.small_bytes;
  info.dropped_events = c.dropped + dropped_pending_;
  info.unmatched_frees = unmatched_frees_;
  info.backend = backend;
  info.runtime = runtime;
  writer_->finish(info);
}

}  // namespace gcprof::inject

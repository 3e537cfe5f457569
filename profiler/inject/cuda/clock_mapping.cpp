#include "clock_mapping.h"

#include <cmath>
#include <mutex>

namespace gcprof::inject::cuda {
namespace {
constexpr int64_t kMinDriftSpanNs = 1000000000;  // shorter spans measure read jitter, not drift
}

void ClockMapping::useHostClock() { host_clock_ = true; }

void ClockMapping::addSample(uint64_t cupti, Ns host) {
  std::lock_guard<OwnLock> guard(lock_);
  if (!have_first_) {
    have_first_ = true;
    first_cupti_ = cupti;
    first_host_ = host;
    return;
  }
  double dc = static_cast<double>(static_cast<int64_t>(cupti - first_cupti_));
  double dh = static_cast<double>(host - first_host_);
  if (std::fabs(dc) < kMinDriftSpanNs || dh <= 0) return;
  double slope = dh / dc;
  // A wall-clock step (settimeofday) is not drift: keep the old slope.
  if (slope > 0.999 && slope < 1.001) slope_ = slope;
}

ClockMapping::Ns ClockMapping::toHost(uint64_t cupti) const {
  if (cupti == 0 || host_clock_) return static_cast<Ns>(cupti);
  std::lock_guard<OwnLock> guard(lock_);
  if (!have_first_) return static_cast<Ns>(cupti);
  double dc = static_cast<double>(static_cast<int64_t>(cupti - first_cupti_));
  return first_host_ + static_cast<Ns>(std::llround(dc * slope_));
}

}  // namespace gcprof::inject::cuda

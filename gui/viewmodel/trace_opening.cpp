#include "trace_opening.h"

#include <cstdio>

namespace gcprof::view {
namespace {

std::string rows(int64_t n) {
  char buf[32];
  if (n >= 1000000)
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  else if (n >= 1000)
    std::snprintf(buf, sizeof buf, "%.1fk", static_cast<double>(n) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

}  // namespace

TraceOpening::TraceOpening(std::string path, int64_t run) : path_(std::move(path)) {
  worker_ = std::thread([this, run] {
    std::string error;
    auto doc = TraceDocument::open(path_, run, &error, [this](int64_t done, int64_t total) {
      total_.store(total);
      read_.store(done);
    });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      doc_ = std::move(doc);
      error_ = error;
    }
    done_.store(true);
  });
}

TraceOpening::~TraceOpening() {
  if (worker_.joinable()) worker_.join();
}

float TraceOpening::fraction() const {
  int64_t total = total_.load();
  return total > 0 ? static_cast<float>(static_cast<double>(read_.load()) / static_cast<double>(total))
                   : 0.0f;
}

std::string TraceOpening::status() const {
  int64_t total = total_.load(), read = read_.load();
  std::string s = "opening " + path_ + ": ";
  if (total == 0 && read == 0) return s + "reading the runs";
  if (read >= total) return s + rows(total) + " rows read, building the view";
  return s + rows(read) + " of " + rows(total) + " rows read";
}

std::unique_ptr<TraceDocument> TraceOpening::take(std::string* error) {
  if (!done()) {
    *error = path_ + ": still opening";
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  *error = error_;
  return std::move(doc_);
}

}  // namespace gcprof::view

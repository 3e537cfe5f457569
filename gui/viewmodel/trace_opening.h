// Opening a trace on a worker thread, so that the window keeps drawing and
// says how far the reading got while a big run loads (a 10M-allocation run
// takes seconds to read and to turn into series and curves).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "trace_document.h"

namespace gcprof::view {

class TraceOpening {
 public:
  // Starts reading `path` (run 0: the one TraceDocument::open picks).
  TraceOpening(std::string path, int64_t run);
  ~TraceOpening();  // waits for the worker
  TraceOpening(const TraceOpening&) = delete;
  TraceOpening& operator=(const TraceOpening&) = delete;

  const std::string& path() const { return path_; }
  bool done() const { return done_.load(); }
  // Rows of the run read so far and in all (0 of 0 until they are counted).
  int64_t rowsRead() const { return read_.load(); }
  int64_t rowsTotal() const { return total_.load(); }
  // 0..1: the rows read; the series and curves are built after the last row.
  float fraction() const;
  // "opening trace.db: 1.2M of 10.0M rows read", then "... building the view".
  std::string status() const;

  // Once done(): the document, or nullptr with *error set. Only once.
  std::unique_ptr<TraceDocument> take(std::string* error);

 private:
  std::string path_;
  std::atomic<int64_t> read_{0}, total_{0};
  std::atomic<bool> done_{false};
  std::mutex mutex_;
  std::unique_ptr<TraceDocument> doc_;
  std::string error_;
  std::thread worker_;
};

}  // namespace gcprof::view

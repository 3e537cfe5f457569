// Any bytes as a trace file: every run, plan and verification read back, or a
// StoreError naming the file; never a crash, undefined behaviour or another
// kind of exception.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trace_store.h"

namespace {

const std::string& scratch() {
  static const std::string p = [] {
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/gcprof_trace_fuzz_" + std::to_string(getpid()) + ".db";
  }();
  return p;
}

void removeScratch() {
  for (const char* ext : {"", "-wal", "-shm", "-journal"}) std::remove((scratch() + ext).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  removeScratch();
  if (FILE* f = std::fopen(scratch().c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    gcprof::TraceStore store(scratch(), gcprof::TraceStore::Mode::ReadOnly);
    for (const gcprof::RunInfo& r : store.runs()) {
      gcprof::Trace t = store.load(r.id);
      (void)t;
    }
    store.plans();
    store.verifications();
    store.lastRun();
  } catch (const gcprof::StoreError&) {
  }
  removeScratch();
  return 0;
}

// The real writer thread in this process, with a fake CUDA backend whose
// flush (called on the writer thread as it stops, as CUPTI's forced flush
// delivers its buffers on the calling thread) hands over more records than
// one thread's ring holds. The writer must not wait on its own ring.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

#include "config.h"
#include "recorder.h"
#include "recording_state.h"
#include "thread_state.h"
#include "trace_store.h"
#include "writer.h"

namespace gcprof::inject {

namespace {
bool g_fake_flush = false;
void pauseMs(long ms) {
  timespec ts{0, ms * 1000000L};
  nanosleep(&ts, nullptr);
}
constexpr int kFlushedKernels = 3 * static_cast<int>(kRingEvents);
}  // namespace

// Replaces the CUDA backend's (a weak symbol in writer.cpp).
void flushCudaBackend() {
  if (!g_fake_flush) return;
  Ns launched = nowNs() - 1000000;  // during the step, mapped to the host clock
  for (int i = 0; i < kFlushedKernels; ++i)
    recordKernel("gemm_kernel", 0, 7, launched + i, launched + i + 500, i, 0);
}

}  // namespace gcprof::inject

using namespace gcprof;
using namespace gcprof::inject;

TEST(WriterFlush, AFlushOnTheWriterThreadLargerThanARingIsWrittenWhole) {
  std::string db = testing::TempDir() + "gcprof_flush_" + std::to_string(getpid()) + ".db";
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((db + ext).c_str());
  setenv("GCPROF_DB", db.c_str(), 1);
  setenv("GCPROF_ROOT_PID", std::to_string(getpid()).c_str(), 1);
  loadConfig();
  ASSERT_TRUE(startWriter());
  recordingState().ready.store(true);
  stepBegin(0);  // the run opens
  pauseMs(5);
  stepEnd();
  g_fake_flush = true;
  // Ten seconds is what a producer waits for room before dropping: a writer
  // waiting on itself would not be finished by then.
  stopWriter("complete", 10000);
  EXPECT_FALSE(writerRunning()) << "the writer waited on its own ring";
  recordingState().disabled.store(true);
  TraceStore s(db, TraceStore::Mode::ReadOnly);
  ASSERT_EQ(s.runs().size(), 1u);
  EXPECT_EQ(s.runs()[0].status, "complete");
  EXPECT_EQ(s.load(s.runs()[0].id).kernels.size(), static_cast<size_t>(kFlushedKernels));
}

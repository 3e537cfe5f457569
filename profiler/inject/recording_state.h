// Process-wide switches the hooks read on every call (relaxed atomics).
#pragma once

#include <atomic>
#include <cstring>

namespace gcprof::inject {

struct RecordingState {
  std::atomic<bool> ready{false};     // set up, writer running
  std::atomic<bool> disabled{false};  // forked child, or the writer failed
  // Recording window (--steps, gcprof ctl): ranges, steps and scalars are
  // recorded only inside it; allocations always are, and the writer keeps
  // those alive during some window.
  std::atomic<bool> window{true};
  // By `gcprof ctl pause`: written by the writer thread, read by training
  // threads at each step.
  std::atomic<bool> paused{false};
  // By `gcprof attach` until the job's heap from before attach is recorded:
  // the job's steps are not seen (a LibTorch job's steps come through the C
  // API at once; its first recorded steps ended before the baseline was in,
  // which then fell outside the window).
  std::atomic<bool> steps_held{false};
  char backend[16] = "host";
  char runtime[16] = "native";
};

// A plain global (constant-initialized, trivially destroyed), read inline:
// every interposed malloc and free of the job asks whether we record.
extern RecordingState g_recording_state;
inline RecordingState& recordingState() { return g_recording_state; }

inline bool recording() {
  RecordingState& s = recordingState();
  return s.ready.load(std::memory_order_relaxed) && !s.disabled.load(std::memory_order_relaxed);
}

// Opens or closes the recording window (an event marks the change in time).
void setWindow(bool open);
// Opens the window when neither `gcprof ctl pause` nor --steps keeps it shut.
void applyWindow();

}  // namespace gcprof::inject

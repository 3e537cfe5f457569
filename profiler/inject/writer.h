// The writer thread: drains every thread's buffer, orders events in time,
// pairs allocations with their frees and ranges with their ends, and appends
// them to the trace in batched transactions. The only thread that touches
// SQLite in a recorded process.
#pragma once

namespace gcprof::inject {

bool startWriter();      // false when the trace cannot be opened (warning printed)
bool writerRunning();
// Ends the writer's sleep before its 100 ms round is over: a thread's buffer is
// half full (an allocation storm). One write() to a pipe; async-signal-safe.
void wakeWriter();
// In a forked child: there is no writer thread to wait for.
void forgetWriterInChild();
// Final drain and run status ("complete" | "failed" | "interrupted") with the
// process's exit code; waits at most `wait_ms`. Safe to call from a signal
// handler (it only sets flags and sleeps).
void stopWriter(const char* status, int wait_ms, int exit_code = 0);

}  // namespace gcprof::inject

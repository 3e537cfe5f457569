// The writer thread: drains every thread's buffer, orders events in time,
// pairs allocations with their frees and ranges with their ends, and appends
// them to the trace in batched transactions. The only thread that touches
// SQLite in a recorded process.
#pragma once

namespace gcprof::inject {

bool startWriter();      // false when the trace cannot be opened (warning printed)
bool writerRunning();
// Ends the writer's sleep before its 200 ms round is over: a thread's buffer is
// half full (an allocation storm). A futex wake, no descriptor; async-signal-safe.
void wakeWriter();
// In a forked child: there is no writer thread to wait for.
void forgetWriterInChild();
// The process is about to exec (the injector's exec hooks): everything
// recorded is written, and what the image held (open ranges, the step, live
// blocks) ends now. Waits at most `wait_ms`; the writer then holds still
// until the exec ends it or resumeAfterFailedExec(). False when there was
// nothing to flush (no writer, or another thread is exec'ing).
bool flushBeforeExec(int wait_ms);
void resumeAfterFailedExec();
// Final drain and run status ("complete" | "failed" | "interrupted") with the
// process's exit code; waits at most `wait_ms`. Safe to call from a signal
// handler (it only sets flags and sleeps).
void stopWriter(const char* status, int wait_ms, int exit_code = 0);

}  // namespace gcprof::inject

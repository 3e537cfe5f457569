/* A small C job run under `gcprof record` by lifecycle_test.cpp: each mode
 * is one way a process begins, idles or ends that the injector must not
 * change (exit code, signals) and must not lose data over.
 *
 *   lifecycle_job MODE READY_FILE   (exit_while_loading: LIBRARY)
 *
 * READY_FILE receives the job's pid once it reached the point the test waits
 * for (written to a temporary name, then renamed: the test never reads half).
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gcprof/gcprof.h"

static const char* g_ready;

static void* keep(void* p) {
  __asm__ volatile("" : : "g"(p) : "memory");
  return p;
}

static void sleepMs(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void signalReady(void) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", g_ready);
  FILE* f = fopen(tmp, "w");
  if (!f) exit(90);
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  if (rename(tmp, g_ready) != 0) exit(91);
}

/* The worker outlives main(), which ended with pthread_exit(): the process
 * ends when the worker returns, with exit code 0. */
static void* finishLater(void* arg) {
  free(keep(malloc(3 << 20)));
  sleepMs(200);  /* main's pthread_exit is done by now */
  return arg;
}

/* The worker holds SIGTERM off until the test has sent it, then returns: the
 * signal is still pending on the process, which must die of it. */
static void* returnWithTermPending(void* arg) {
  sigset_t term, pending;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, NULL);
  signalReady();
  for (int i = 0; i < 3000; ++i) { /* at most 30 s */
    sigpending(&pending);
    if (sigismember(&pending, SIGTERM)) break;
    sleepMs(10);
  }
  return arg;
}

static int mainEndsFirst(void* (*worker)(void*)) {
  pthread_t t;
  if (pthread_create(&t, NULL, worker, NULL) != 0) return 92;
  pthread_exit(NULL);
  return 0; /* not reached */
}

/* 64 blocks of 1 MiB held, then nothing: a rank hung in a collective, until
 * it is killed. */
static int holdThenIdle(void) {
  for (int i = 0; i < 64; ++i) memset(keep(malloc(1 << 20)), 1, 4096);
  signalReady();
  for (;;) pause();
  return 0; /* not reached */
}

/* A launcher that marks ranges, holds memory and execs the training program
 * (itself, `after_exec`), with a range still open: both images' ranges,
 * steps and blocks belong in the trace. */
static int markThenExec(const char* self) {
  uint64_t setup = gcprof_range_start("launcher.setup", GCPROF_USER);
  keep(malloc(2 << 20));  /* held until the exec frees it */
  gcprof_range_end(setup);
  gcprof_range_start("launcher.exec", GCPROF_USER);  /* ended by the exec */
  execl(self, self, "after_exec", g_ready, (char*)NULL);
  return 93;
}

static int trainAfterExec(void) {
  for (int step = 0; step < 2; ++step) {
    gcprof_step_begin(step);
    uint64_t fwd = gcprof_range_start("layers.0", GCPROF_FORWARD);
    void* act = keep(malloc((1 << 20) + step));
    gcprof_range_end(fwd);
    free(act);
    gcprof_step_end();
  }
  return 0;
}

/* _exit while another thread is inside dlopen (a library's constructor
 * runs, holding the loader's lock): the exit must not need that lock. */
static const char* g_library;
static void* loadLibrary(void* arg) {
  dlopen(g_library, RTLD_NOW);
  return arg;
}

static int exitWhileLoading(const char* library) {
  int entered[2], release[2];
  if (pipe(entered) != 0 || pipe(release) != 0) return 94;
  char fds[64];
  snprintf(fds, sizeof fds, "%d %d", entered[1], release[0]);
  setenv("GCPROF_TEST_LOADER_FDS", fds, 1);
  g_library = library;
  pthread_t t;
  if (pthread_create(&t, NULL, loadLibrary, NULL) != 0) return 95;
  char byte;
  if (read(entered[0], &byte, 1) != 1) return 96;
  _exit(5);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: lifecycle_job worker_ends|term_pending_at_end|hold_then_idle|mark_then_exec READY_FILE\n");
    return 2;
  }
  g_ready = argv[2];
  if (strcmp(argv[1], "worker_ends") == 0) return mainEndsFirst(finishLater);
  if (strcmp(argv[1], "term_pending_at_end") == 0) return mainEndsFirst(returnWithTermPending);
  if (strcmp(argv[1], "hold_then_idle") == 0) return holdThenIdle();
  if (strcmp(argv[1], "mark_then_exec") == 0) return markThenExec(argv[0]);
  if (strcmp(argv[1], "after_exec") == 0) return trainAfterExec();
  if (strcmp(argv[1], "exit_while_loading") == 0) return exitWhileLoading(argv[2]);
  fprintf(stderr, "lifecycle_job: unknown mode %s\n", argv[1]);
  return 2;
}

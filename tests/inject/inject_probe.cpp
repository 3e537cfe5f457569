// A small program run under `gcprof record` by injector_test.cpp. Each mode
// exercises one promise of the injector; sizes are distinctive so the test
// can find exactly these allocations in the trace.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <malloc.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gcprof/gcprof.h"

namespace {

void* keep(void* p) {
  // Stop the compiler from eliding malloc/free pairs.
  asm volatile("" : : "g"(p) : "memory");
  return p;
}

int threads() {
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) {
    pool.emplace_back([t] {
      std::string name = "thread." + std::to_string(t);
      uint64_t r = gcprof_range_start(name.c_str(), GCPROF_USER);
      for (int i = 0; i < 1000; ++i) free(keep(malloc(40000 + t * 16)));
      gcprof_range_end(r);
    });
  }
  for (auto& th : pool) th.join();
  return 0;
}

int small() {
  for (int i = 0; i < 10000; ++i) free(keep(malloc(100)));
  free(keep(malloc(50000)));
  return 0;
}

// Blocks from just under to just over --min-bytes 1KiB, by three functions,
// all allocated, then all freed (no address is reused in between, which would
// close a block whose free was missed): the free hook's size test must let
// every recorded one through.
int threshold() {
  static void* blocks[3 * 101];
  int k = 0;
  for (size_t n = 1000; n <= 1100; ++n) {
    blocks[k++] = keep(malloc(n));
    if (posix_memalign(&blocks[k++], 64, n) != 0) blocks[k - 1] = nullptr;
    blocks[k++] = keep(memalign(4096, n));
  }
  for (void* p : blocks) free(p);
  return 0;
}

int apis() {
  void* p = nullptr;
  free(keep(calloc(10, 6100)));                      // 61000
  free(keep(realloc(keep(malloc(62000)), 63000)));   // 62000 then 63000
  if (posix_memalign(&p, 64, 64000) == 0) free(keep(p));
  free(keep(aligned_alloc(64, 65536)));
  free(keep(memalign(128, 66000)));
  free(keep(valloc(67000)));
  return 0;
}

int forkChild() {
  void* mine = keep(malloc(77777));
  pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 10; ++i) free(keep(malloc(88888)));
    exit(0);  // runs atexit handlers: must not hang or write
  }
  int status = 0;
  waitpid(pid, &status, 0);
  free(mine);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int steps() {
  for (int s = 0; s < 4; ++s) {
    gcprof_step_begin(s);
    uint64_t f = gcprof_range_start("layers.0", GCPROF_FORWARD);
    void* act = keep(malloc(100000 + s));
    gcprof_range_end(f);
    uint64_t b = gcprof_range_start("layers.0", GCPROF_BACKWARD);
    free(act);
    gcprof_range_end(b);
    gcprof_scalar("loss", 1.0 / (s + 1));
    gcprof_step_end();
  }
  return 0;
}

// Single-threaded and long enough (~300 ms) for the writer to run several
// rounds of SQLite work while the job allocates.
int busy() {
  for (int i = 0; i < 3000; ++i) {
    free(keep(malloc(50000 + (i % 7) * 16)));
    if (i % 100 == 0) usleep(10000);
  }
  return 0;
}

int sigterm() {
  gcprof_step_begin(0);
  keep(malloc(99999));
  gcprof_step_end();
  raise(SIGTERM);
  return 0;
}

// A process that marks a step (so it has a run of its own) and ends with a
// code: by returning from main, or by _exit, which runs no exit handlers.
int markAndEnd(bool underscore, int code) {
  gcprof_step_begin(0);
  keep(malloc(99999));
  gcprof_step_end();
  if (underscore) _exit(code);
  return code;
}

// Two children (as torchrun starts ranks), each ending with its own code;
// only the injector in the child can tell its run how it ended.
int children(const char* self) {
  for (const char* mode : {"return3", "underscore4"}) {
    pid_t pid = fork();
    if (pid == 0) {
      execl(self, self, mode, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
  }
  return 0;
}

// A child (as a torchrun rank) that marks a step and then aborts, as
// std::terminate does ("terminate called without an active exception").
int abortingChild(const char* self) {
  pid_t pid = fork();
  if (pid == 0) {
    execl(self, self, "abort", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT ? 0 : 1;
}

// The abort comes from a named thread, as from a library's worker thread.
void* abortInNamedThread(void*) {
  pthread_setname_np(pthread_self(), "probe-aborter");
  abort();
}

// Two threads abort at once (a crash in two workers): one report, one
// flush, and the process dies of SIGABRT (`two_aborts`).
pthread_barrier_t g_both;
void* abortTogether(void*) {
  pthread_barrier_wait(&g_both);
  abort();
}

int twoAborts() {
  gcprof_step_begin(0);
  keep(malloc(99999));
  gcprof_step_end();
  pthread_barrier_init(&g_both, nullptr, 2);
  pthread_t a, b;
  pthread_create(&a, nullptr, abortTogether, nullptr);
  pthread_create(&b, nullptr, abortTogether, nullptr);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  return 1;  // not reached
}

int markAndAbort() {
  gcprof_step_begin(0);
  keep(malloc(99999));
  gcprof_step_end();
  pthread_t t;
  pthread_create(&t, nullptr, abortInNamedThread, nullptr);
  pthread_join(t, nullptr);
  return 1;  // not reached: the process dies of SIGABRT
}

// A realloc that fails leaves the old block live (C says so): it must stay
// live in the trace too.
int reallocFails() {
  void* p = keep(malloc(90000));
  void* q = realloc(p, static_cast<size_t>(-1) / 4);  // no machine has this much
  if (q) return 3;
  keep(p);  // still ours; the job exits with it live
  return 0;
}

// Peak resident memory of this process (VmHWM, KiB), printed for the tests.
long peakRssKib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
  if (f) std::fclose(f);
  return kib;
}

// Many threads allocating as fast as they can, before any marker (the
// storm that bench/record/storm.py runs): `storm THREADS PER_THREAD`.
int storm(int threads, int per_thread) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([per_thread] {
      for (int i = 0; i < per_thread; ++i) free(keep(malloc(4104)));  // not 4096: stdio buffers are
    });
  for (auto& th : pool) th.join();
  std::printf("peak_rss_kib %ld\n", peakRssKib());
  return 0;
}

// Small-allocation path (bench/history/recording-overhead.md): `small_storm N` does N
// malloc/free of 100 bytes on one thread (below --min-bytes: counted, not
// recorded) and prints that thread's CPU time, the hook's cost per call.
int smallStorm(int n) {
  timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (int i = 0; i < n; ++i) free(keep(malloc(100)));
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  std::printf("thread_cpu_ns %lld\n",
              (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
  return 0;
}

// Thread churn: `churn N` short-lived threads, one after the other, each
// allocating one block whose size encodes its thread id (8192 + 16 * (tid %
// 4096)), so the test can check that every block is attributed to the
// thread that made it.
int churn(int n) {
  for (int i = 0; i < n; ++i) {
    std::thread([] {
      long tid = gettid();
      free(keep(malloc(8192 + 16 * static_cast<size_t>(tid % 4096))));
    }).join();
  }
  std::printf("peak_rss_kib %ld\n", peakRssKib());
  return 0;
}

// Many blocks alive at once: `live N` allocates N blocks of 1 KiB, holds
// them for 0.5 s (two writer rounds: every one is in the writer's live map
// and written as live), prints the peak RSS, then frees them.
int live(int n) {
  std::vector<void*> blocks(static_cast<size_t>(n));
  for (void*& p : blocks) p = keep(malloc(1040));  // just above --min-bytes' default
  usleep(500000);
  std::printf("peak_rss_kib %ld\n", peakRssKib());
  for (void* p : blocks) free(p);
  return 0;
}

// The writer thread's scheduling (`writer_sched`): exit 0 when the thread
// named gcprof-writer runs at nice 0 with SCHED_BATCH, 5 when it does not, 6
// when there is no such thread (docs/recording.md, "Cost").
int writerSched() {
  for (int tries = 0; tries < 200; ++tries, usleep(10000)) {
    DIR* dir = opendir("/proc/self/task");
    if (!dir) return 6;
    while (dirent* d = readdir(dir)) {
      std::string task = std::string("/proc/self/task/") + d->d_name;
      char comm[64] = "";
      if (FILE* f = std::fopen((task + "/comm").c_str(), "r")) {
        if (!std::fgets(comm, sizeof comm, f)) comm[0] = 0;
        std::fclose(f);
      }
      if (std::string(comm) != "gcprof-writer\n") continue;
      char stat[1024] = "";
      if (FILE* f = std::fopen((task + "/stat").c_str(), "r")) {
        if (!std::fgets(stat, sizeof stat, f)) stat[0] = 0;
        std::fclose(f);
      }
      closedir(dir);
      // Fields after the ")" that ends the name: 3 (state) ... 19 (nice) ... 41 (policy).
      const char* p = std::strrchr(stat, ')');
      long field[42] = {};
      for (int i = 3; p && i <= 41; ++i) {
        p = std::strchr(p + 1, ' ');
        if (p) field[i] = std::strtol(p + 1, nullptr, 10);
      }
      std::printf("writer nice %ld policy %ld\n", field[19], field[41]);
      return field[19] == 0 && field[41] == SCHED_BATCH ? 0 : 5;
    }
    closedir(dir);
  }
  return 6;
}

// A job that closes the pipes it did not open (as a daemon closes every
// descriptor) and opens files of its own, which get their numbers: then
// allocates enough to wake the writer, and exits (which wakes it too).
// Nothing of gcprof's may land in its files (`reused_descriptors DIR`).
int reusedDescriptors(const std::string& dir) {
  std::vector<int> closed;
  if (DIR* fds = opendir("/proc/self/fd")) {
    while (dirent* d = readdir(fds)) {
      int fd = std::atoi(d->d_name);
      char target[256] = "";
      std::string link = std::string("/proc/self/fd/") + d->d_name;
      ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (fd > 2 && n > 0 && std::strncmp(target, "pipe:", 5) == 0) closed.push_back(fd);
    }
    closedir(fds);
  }
  for (int fd : closed) close(fd);
  for (size_t i = 0; i < closed.size() + 2; ++i) {
    std::string path = dir + "/job_file_" + std::to_string(i);
    if (open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644) < 0) return 7;  // kept open
  }
  for (int i = 0; i < 100000; ++i) free(keep(malloc(50000)));
  std::printf("closed %zu pipe descriptors\n", closed.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "return3") return markAndEnd(false, 3);
  if (mode == "underscore4") return markAndEnd(true, 4);
  if (mode == "children") return children(argv[0]);
  if (mode == "aborting_child") return abortingChild(argv[0]);
  if (mode == "abort") return markAndAbort();
  if (mode == "two_aborts") return twoAborts();
  if (mode == "threads") return threads();
  if (mode == "small") return small();
  if (mode == "apis") return apis();
  if (mode == "threshold") return threshold();
  if (mode == "fork") return forkChild();
  if (mode == "steps") return steps();
  if (mode == "sigterm") return sigterm();
  if (mode == "busy") return busy();
  if (mode == "realloc_fails") return reallocFails();
  if (mode == "storm" && argc == 4) return storm(std::atoi(argv[2]), std::atoi(argv[3]));
  if (mode == "small_storm" && argc == 3) return smallStorm(std::atoi(argv[2]));
  if (mode == "churn" && argc == 3) return churn(std::atoi(argv[2]));
  if (mode == "live" && argc == 3) return live(std::atoi(argv[2]));
  if (mode == "writer_sched") return writerSched();
  if (mode == "reused_descriptors" && argc == 3) return reusedDescriptors(argv[2]);
  std::fprintf(stderr, "usage: inject_probe threads|small|apis|fork|steps|sigterm|busy|realloc_fails|children|return3|underscore4|storm T N|churn N|live N|writer_sched\n");
  return 2;
}

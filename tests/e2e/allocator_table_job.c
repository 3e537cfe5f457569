// A native job that allocates and frees only through a table of function
// pointers in a library's data (allocator_table.c, argv[2]; LibTorch, argv[1],
// is loaded only so that gcprof attaches to it): 3 MiB blocks, each freed when
// the next is made, and one 5 MiB block made before "ready" and freed at
// SIGUSR1. Marks a step every 10 blocks; runs for argv[3] seconds.
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcprof/gcprof.h"
#include "native_job.h"

enum { kBlock = 3 << 20, kKept = 5 << 20 };

static volatile sig_atomic_t g_release_kept = 0;
static void onUsr1(int sig) { (void)sig; g_release_kept = 1; }

int main(int argc, char** argv) {
  void* lib = NULL;
  if (argc < 4 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) || !(lib = dlopen(argv[2], RTLD_NOW))) {
    fprintf(stderr, "usage: allocator_table_job LIBTORCH_CPU LIBALLOCATOR_TABLE SECONDS (%s)\n",
            dlerror());
    return 2;
  }
  void* (*alloc)(size_t) = (void* (*)(size_t))dlsym(lib, "table_alloc");
  void (*release)(void*) = (void (*)(void*))dlsym(lib, "table_release");
  struct timespec pause = {0, 1000000};
  signal(SIGUSR1, onUsr1);
  char* kept = alloc(kKept);
  memset(kept, 1, kKept);
  char* held = alloc(kBlock);
  memset(held, 1, kBlock);
  double end = now() + atof(argv[3]);
  printf("ready\n");
  fflush(stdout);
  for (int64_t step = 0; now() < end; ++step) {
    gcprof_step_begin(step);
    // Freed inside a step that began after the signal: a step recorded,
    // whatever step the signal came in.
    int release_kept = g_release_kept && kept;
    for (int i = 0; i < 10; ++i) {
      char* p = alloc(kBlock);
      memset(p, 1, 4096);
      release(held);
      held = p;
      if (release_kept && i == 5) {
        release(kept);
        kept = NULL;
      }
      nanosleep(&pause, NULL);
    }
    gcprof_step_end();
  }
  release(held);
  return 0;
}

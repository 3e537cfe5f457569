// A native job that marks steps through gcprof.h and allocates one small
// block a step: while no gcprof is loaded, gcprof.h looks its functions up at
// every step, and each failed dlsym frees the thread's previous error text
// and makes a new one, so half the job's calls of malloc and free are the
// dynamic loader's. It loads LibTorch (argv[1]) so that `gcprof attach` takes
// it for a LibTorch job, prints "ready" and runs for argv[2] seconds.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcprof/gcprof.h"
#include "native_job.h"

int main(int argc, char** argv) {
  if (argc < 3 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "usage: step_lookup_job LIBTORCH_CPU SECONDS (%s)\n", dlerror());
    return 2;
  }
  struct timespec pause = {0, 100000};
  double end = now() + atof(argv[2]);
  printf("ready\n");
  fflush(stdout);
  for (int64_t step = 0; now() < end; ++step) {
    gcprof_step_begin(step);
    char* p = malloc(64);
    memset(p, 1, 64);
    free(p);
    gcprof_step_end();
    nanosleep(&pause, NULL);
  }
  return 0;
}

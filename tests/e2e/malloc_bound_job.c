// A native job that spends nearly all its time inside malloc and free, with
// a second thread so that glibc's malloc takes its arena lock: where a
// stopped thread most likely holds that lock. It loads LibTorch (argv[1]) so
// that `gcprof attach` takes it for a LibTorch job, prints "ready" and runs
// for argv[2] seconds.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "native_job.h"

static void* idle(void* arg) {
  for (;;) pause();
  return arg;
}

int main(int argc, char** argv) {
  if (argc < 3 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "usage: malloc_bound_job LIBTORCH_CPU SECONDS (%s)\n", dlerror());
    return 2;
  }
  pthread_t thread;
  pthread_create(&thread, NULL, idle, NULL);
  static void* keep[4096];
  unsigned s = 1;
  double end = now() + atof(argv[2]);
  printf("ready\n");
  fflush(stdout);
  while (now() < end) {
    for (int i = 0; i < 100000; ++i) {
      s = s * 1103515245u + 12345u;
      unsigned k = (s >> 8) % 4096;
      free(keep[k]);
      keep[k] = malloc(16 + (s >> 4) % 200000);
    }
  }
  return 0;
}

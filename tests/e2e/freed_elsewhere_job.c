// A native job whose blocks are allocated by the program and freed by a
// library loaded after LibTorch (argv[2]): `gcprof attach` patches the
// program's GOT first and that library's last, tens of milliseconds later.
// Marks a step every 1,000 blocks; prints "ready" and runs for argv[3] seconds.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gcprof/gcprof.h"
#include "native_job.h"

int main(int argc, char** argv) {
  void* lib = NULL;
  if (argc < 4 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) || !(lib = dlopen(argv[2], RTLD_NOW))) {
    fprintf(stderr, "usage: freed_elsewhere_job LIBTORCH_CPU LIBRELEASE SECONDS (%s)\n", dlerror());
    return 2;
  }
  void (*release)(void*) = (void (*)(void*))dlsym(lib, "release");
  double end = now() + atof(argv[3]);
  printf("ready\n");
  fflush(stdout);
  for (int64_t step = 0; now() < end; ++step) {
    gcprof_step_begin(step);
    for (int i = 0; i < 1000; ++i) {
      char* p = malloc(65536);
      memset(p, 1, 64);
      release(p);
    }
    gcprof_step_end();
  }
  return 0;
}

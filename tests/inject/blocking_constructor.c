/* A library whose constructor holds the dynamic loader's lock (dlopen runs
 * constructors under it) until told to go on: lifecycle_job's
 * exit_while_loading calls _exit meanwhile. GCPROF_TEST_LOADER_FDS="E R":
 * the constructor writes a byte to E once it runs, then reads R. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void holdTheLoaderLock(void) {
  const char* fds = getenv("GCPROF_TEST_LOADER_FDS");
  int entered = -1, release = -1;
  if (!fds || sscanf(fds, "%d %d", &entered, &release) != 2) return;
  char byte = 1;
  if (write(entered, &byte, 1) != 1) return;
  while (read(release, &byte, 1) < 0) {
  }
}

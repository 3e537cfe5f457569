// free() called from a library of its own (freed_elsewhere_job.c).
#include <stdlib.h>

void release(void* p) { free(p); }

// An allocator reached only through function pointers kept in data, as MKL
// inside libtorch_cpu reaches malloc and free (its i_malloc and i_free): the
// linker writes their addresses into this library's data at load, and the
// calls below never go through a GOT slot (allocator_table_job.c).
#include <stdlib.h>

void* (*table_malloc)(size_t) = malloc;
void (*table_free)(void*) = free;

void* table_alloc(size_t n) { return table_malloc(n); }
void table_release(void* p) { table_free(p); }

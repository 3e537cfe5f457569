/* gcprof C API: mark layers, steps and scalars from a training program.
 *
 * Header-only on purpose: a program that includes it links nothing of gcprof.
 * The functions look up the injector (libgcprof_inject.so, loaded by
 * `gcprof record` through LD_PRELOAD, or by `gcprof attach` later) with
 * dlsym; when it is not loaded every call is a cheap no-op (one predictable
 * branch; a step start also costs one dlsym).
 *
 *   gcprof_step_begin(step);
 *   uint64_t r = gcprof_range_start("layers.3", GCPROF_FORWARD);
 *   ...
 *   gcprof_range_end(r);
 *   gcprof_scalar("loss", loss);
 *   gcprof_step_end();
 *
 * Ranges are start/end pairs rather than a strict stack because backward
 * ranges begin and end inside autograd callbacks whose order does not nest.
 * Allocations are attributed to the innermost open range of the calling thread.
 */
#ifndef GCPROF_GCPROF_H
#define GCPROF_GCPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a range marks. Module ranges carry a module's qualified name. */
enum gcprof_phase {
  GCPROF_USER = 0,     /* anything else: data loading, optimizer, ... */
  GCPROF_FORWARD = 1,  /* a module's forward */
  GCPROF_BACKWARD = 2, /* a module's backward */
};

/* The entry points the injector exports (stable ABI, version 1). */
typedef struct gcprof_api_v1 {
  uint64_t (*range_start)(const char* name, int phase);
  void (*range_end)(uint64_t id);
  void (*step_begin)(int64_t step);
  void (*step_end)(void);
  void (*scalar)(const char* name, double value);
} gcprof_api_v1;

#ifdef __cplusplus
}
#endif

#ifndef GCPROF_INJECTOR_BUILD
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>

/* The injector's entry points, or NULL. One cache for the whole program
 * (a weak definition: every translation unit shares it), looked up at the
 * first call, and again at each gcprof_step_begin while it is NULL:
 * `gcprof attach` can load the injector into a program that is running
 * (one dlsym per step until then). */
__attribute__((weak)) const gcprof_api_v1* gcprof_api_cache = 0;
__attribute__((weak)) int gcprof_api_looked_up = 0;

static inline const gcprof_api_v1* gcprof_api_lookup(void) {
  const gcprof_api_v1* (*get)(void) =
      (const gcprof_api_v1* (*)(void))dlsym(RTLD_DEFAULT, "gcprof_get_api_v1");
  gcprof_api_cache = get ? get() : 0;
  gcprof_api_looked_up = 1;
  return gcprof_api_cache;
}

static inline const gcprof_api_v1* gcprof_api(void) {
  return gcprof_api_looked_up ? gcprof_api_cache : gcprof_api_lookup();
}

static inline uint64_t gcprof_range_start(const char* name, int phase) {
  const gcprof_api_v1* a = gcprof_api();
  return a ? a->range_start(name, phase) : 0;
}
static inline void gcprof_range_end(uint64_t id) {
  const gcprof_api_v1* a = gcprof_api();
  if (a) a->range_end(id);
}
static inline void gcprof_step_begin(int64_t step) {
  const gcprof_api_v1* a = gcprof_api();
  if (!a) a = gcprof_api_lookup();
  if (a) a->step_begin(step);
}
static inline void gcprof_step_end(void) {
  const gcprof_api_v1* a = gcprof_api();
  if (a) a->step_end();
}
static inline void gcprof_scalar(const char* name, double value) {
  const gcprof_api_v1* a = gcprof_api();
  if (a) a->scalar(name, value);
}
#endif /* GCPROF_INJECTOR_BUILD */

#endif /* GCPROF_GCPROF_H */

// What the attach tests' native jobs share: the clock they run by ("runs
// for SECONDS").
#pragma once

#include <time.h>

static inline double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

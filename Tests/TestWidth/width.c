// How many tests the suite runs at once. Swift Testing starts every test of the suite
// together unless told otherwise (SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH); with
// hundreds of tests, each doing some blocking SQLite or libpq work on Swift's cooperative
// pool (one thread per core), a test on a 2-core machine waits minutes for a thread.
// Before the runner reads its environment, this sets a width of four tests per core,
// unless the variable is set already (a person's own choice wins).
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include "TestWidth.h"

__attribute__((constructor)) static void sessionstorage_test_width(void) {
  if (getenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH") != NULL) return;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  char width[32];
  snprintf(width, sizeof width, "%ld", cores * 4);
  setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", width, 0);
}

int sessionstorage_test_width_is_linked(void) { return 1; }

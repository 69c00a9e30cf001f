/* app_work.h - the deterministic work the sample tiers do for a request: CPU
 * burn with a checkable result, and the data files they read. Same input gives
 * the same output on every run (tests compare results), never random. */
#ifndef APP_WORK_H
#define APP_WORK_H

#include <stddef.h>
#include <stdint.h>

/* Iterations of app_work_cpu that take roughly one millisecond on the 2-core
 * development VM (about 3.5 ns each, measured in a Release build); only a scale,
 * never a promise: the ASan build is slower. */
#define APP_WORK_ITERATIONS_PER_MS 285000ull

/* Real computation: iterates a 64-bit mixing function `iterations` times over a
 * seed and returns the final state (callers put it in the response). */
uint64_t app_work_cpu(uint64_t seed, uint64_t iterations);

/* FNV-1a checksum of a buffer. */
uint64_t app_work_checksum(const void *buf, size_t len);

/* Makes sure path exists with exactly `size` bytes of deterministic content
 * (rewrites it when its size differs). 0, or -1 with a reason in err. */
int app_work_ensure_file(const char *path, size_t size, char *err, size_t err_cap);

#endif

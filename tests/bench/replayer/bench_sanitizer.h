/* bench_sanitizer.h - BENCH_SANITIZED is 1 when the benchmark is built with
 * AddressSanitizer (GCC's __SANITIZE_ADDRESS__ or clang's
 * __has_feature(address_sanitizer)), else 0. Under a sanitizer the
 * instrumented code is 2 .. 10x slower than what it is compared with, by
 * an amount that moves from run to run: the --quick benchmarks then judge
 * only what the instrumentation cannot blur. Must never hold anything but
 * this one decision. */
#ifndef PREPLAY_BENCH_SANITIZER_H
#define PREPLAY_BENCH_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define BENCH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif
#ifndef BENCH_SANITIZED
#define BENCH_SANITIZED 0
#endif

#endif

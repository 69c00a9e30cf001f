/* collector_waker.h - a traced thread waiting for ring room wakes the
 * collector through a futex word in its region (collector_waker.c). */
#ifndef PREPLAY_COLLECTOR_WAKER_H
#define PREPLAY_COLLECTOR_WAKER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* futex_waitv takes at most 128 words; one is the waker's own. */
#define COLLECTOR_WAKER_MAX_WORDS 127u

struct collector_waker;

/* Starts the waker thread, or returns NULL with a one-line reason (e.g. a
 * kernel without futex_waitv): the collector then polls on a short timer. */
struct collector_waker *collector_waker_start(char *err, size_t errlen);

/* 1 while the waker works (it stops if it ever cannot wait; NULL: 0). */
int collector_waker_ok(struct collector_waker *w);

/* The eventfd that becomes readable when a watched word was raised. */
int collector_waker_fd(const struct collector_waker *w);

/* Watches these words (the regions' collector_wake) from now on. Call it
 * before a watched word's memory goes away. Returns 0, or -1 when there
 * are more than COLLECTOR_WAKER_MAX_WORDS (the first ones are watched). */
int collector_waker_watch(struct collector_waker *w, _Atomic uint32_t *const *words, size_t n);

/* Reads the eventfd: 1 when a word was raised since the last call. */
int collector_waker_consume(struct collector_waker *w);

/* After a drain: the words go back to 0 and the thread watches again. */
void collector_waker_rearm(struct collector_waker *w);

/* Stops and frees (NULL: nothing). */
void collector_waker_stop(struct collector_waker *w);

#endif

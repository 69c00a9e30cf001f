/* grow_array.h - the one way preplay grows a malloc'ed array by doubling,
 * shared by every module that keeps such an array (formats, analyzer,
 * replayer, regress, the collector). It must never free or lose the old
 * array when it cannot grow, and never compute a size that wraps. */
#ifndef PREPLAY_GROW_ARRAY_H
#define PREPLAY_GROW_ARRAY_H

#include <stddef.h>

/* Makes *ptr, an array of elem-byte elements with room for *cap of them,
 * hold at least need: the room becomes first when *cap is 0 (1 when first
 * is 0), then doubles until need fits. 0 (nothing done when need <= *cap),
 * or -1 when memory runs out or a doubled size in bytes would pass SIZE_MAX
 * (or elem is 0): *ptr and *cap are then untouched and the old array keeps
 * its contents; the caller still owns and frees it. Callers pass
 * (void **)&arr, as plan_reader's PLAN_PUSH does (-fno-strict-aliasing). */
int grow_array(void **ptr, size_t *cap, size_t need, size_t elem, size_t first);

#endif

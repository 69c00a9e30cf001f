/* trace_u64map.h - a small open-addressing hash map from 64-bit keys to
 * 32-bit values, with O(1) clearing (a generation stamp), used by the trace
 * codec (per-frame thread/descriptor state), the reader's string table and
 * `preplay info`'s aggregations. It never allocates on lookup of an existing
 * key; inserting grows the table (amortized) and can fail only on ENOMEM. */
#ifndef PREPLAY_TRACE_U64MAP_H
#define PREPLAY_TRACE_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct trace_u64map_slot {
    uint64_t key;
    uint32_t value;
    uint32_t gen; /* slot is live when gen == map->gen */
};

struct trace_u64map {
    struct trace_u64map_slot *slots;
    size_t cap; /* power of two or 0 */
    size_t count;
    uint32_t gen;
};

void trace_u64map_init(struct trace_u64map *m);
void trace_u64map_free(struct trace_u64map *m);
/* Forgets every key in O(1) (amortized; a full wipe every 2^32 clears). */
void trace_u64map_clear(struct trace_u64map *m);
/* Returns a pointer to the value of key, or NULL when absent. */
uint32_t *trace_u64map_find(const struct trace_u64map *m, uint64_t key);
/* Returns the value slot of key, inserting it with `initial` when absent
 * (*inserted tells which). NULL only when memory runs out. */
uint32_t *trace_u64map_upsert(struct trace_u64map *m, uint64_t key, uint32_t initial,
                              int *inserted);

#endif

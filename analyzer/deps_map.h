/* deps_map.h - open-addressing hash map from 64-bit keys to pointers, with
 * deletion (backward-shift, no tombstones), used by the analyzer for
 * per-process thread and connection tables and the pairing index. It never
 * owns the values; it must never be iterated while being modified. */
#ifndef PREPLAY_DEPS_MAP_H
#define PREPLAY_DEPS_MAP_H

#include <stddef.h>
#include <stdint.h>

struct deps_map_slot {
    uint64_t key;
    void *value; /* NULL = empty slot */
};

struct deps_map {
    struct deps_map_slot *slots;
    size_t cap; /* power of two or 0 */
    size_t count;
};

void deps_map_init(struct deps_map *m);
void deps_map_free(struct deps_map *m);
void *deps_map_get(const struct deps_map *m, uint64_t key);
/* Inserts or replaces (value must not be NULL). 0, or -1 on ENOMEM. */
int deps_map_put(struct deps_map *m, uint64_t key, void *value);
/* Removes key; returns the value it had or NULL. */
void *deps_map_del(struct deps_map *m, uint64_t key);
/* Mixes several words into one key (for composite keys). */
uint64_t deps_map_mix(uint64_t a, uint64_t b);

#endif

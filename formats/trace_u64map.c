/* trace_u64map.c - open-addressing (linear probing) u64 -> u32 map with a
 * generation stamp so that clearing a per-frame table costs nothing. Keys
 * are mixed with a 64-bit finalizer so small sequential keys (fds, tids,
 * string ids) spread evenly. Never shrinks: the codec clears and reuses it
 * once per frame. */
#include "trace_u64map.h"

#include <stdlib.h>
#include <string.h>

static uint64_t trace_u64map_hash(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

void trace_u64map_init(struct trace_u64map *m)
{
    memset(m, 0, sizeof *m);
    m->gen = 1;
}

void trace_u64map_free(struct trace_u64map *m)
{
    free(m->slots);
    trace_u64map_init(m);
}

void trace_u64map_clear(struct trace_u64map *m)
{
    m->count = 0;
    if (++m->gen == 0) {
        /* Wrapped: stale stamps could look live again, so wipe once. */
        if (m->slots)
            memset(m->slots, 0, m->cap * sizeof *m->slots);
        m->gen = 1;
    }
}

uint32_t *trace_u64map_find(const struct trace_u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = trace_u64map_hash(key) & mask;; i = (i + 1) & mask) {
        struct trace_u64map_slot *s = &m->slots[i];
        if (s->gen != m->gen)
            return NULL;
        if (s->key == key)
            return &s->value;
    }
}

static int trace_u64map_grow(struct trace_u64map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    struct trace_u64map_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        struct trace_u64map_slot *s = &m->slots[i];
        if (s->gen != m->gen)
            continue;
        size_t j = trace_u64map_hash(s->key) & (ncap - 1);
        while (ns[j].gen == 1)
            j = (j + 1) & (ncap - 1);
        ns[j] = (struct trace_u64map_slot){s->key, s->value, 1};
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->gen = 1;
    return 0;
}

uint32_t *trace_u64map_upsert(struct trace_u64map *m, uint64_t key, uint32_t initial, int *inserted)
{
    uint32_t *v = trace_u64map_find(m, key);
    if (v) {
        if (inserted)
            *inserted = 0;
        return v;
    }
    if ((m->count + 1) * 2 > m->cap && trace_u64map_grow(m) != 0)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = trace_u64map_hash(key) & mask;
    while (m->slots[i].gen == m->gen)
        i = (i + 1) & mask;
    m->slots[i] = (struct trace_u64map_slot){key, initial, m->gen};
    m->count++;
    if (inserted)
        *inserted = 1;
    return &m->slots[i].value;
}

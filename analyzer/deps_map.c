/* deps_map.c - see deps_map.h. Linear probing with backward-shift deletion
 * keeps lookups short without tombstones, so a map whose keys churn
 * (connections opening and closing for hours) never degrades. */
#include "deps_map.h"

#include <stdlib.h>

static size_t deps_map_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k;
}

uint64_t deps_map_mix(uint64_t a, uint64_t b)
{
    return deps_map_hash(a ^ deps_map_hash(b + 0x9e3779b97f4a7c15ull)) + b;
}

void deps_map_init(struct deps_map *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
}

void deps_map_free(struct deps_map *m)
{
    free(m->slots);
    deps_map_init(m);
}

void *deps_map_get(const struct deps_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = deps_map_hash(key) & mask;; i = (i + 1) & mask) {
        if (!m->slots[i].value)
            return NULL;
        if (m->slots[i].key == key)
            return m->slots[i].value;
    }
}

static int deps_map_grow(struct deps_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    struct deps_map_slot *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->slots[j].value)
            continue;
        size_t i = deps_map_hash(m->slots[j].key) & (ncap - 1);
        while (ns[i].value)
            i = (i + 1) & (ncap - 1);
        ns[i] = m->slots[j];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

int deps_map_put(struct deps_map *m, uint64_t key, void *value)
{
    if ((m->count + 1) * 4 > m->cap * 3 && deps_map_grow(m) != 0)
        return -1;
    size_t mask = m->cap - 1;
    size_t i = deps_map_hash(key) & mask;
    while (m->slots[i].value && m->slots[i].key != key)
        i = (i + 1) & mask;
    if (!m->slots[i].value)
        m->count++;
    m->slots[i].key = key;
    m->slots[i].value = value;
    return 0;
}

void *deps_map_del(struct deps_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    size_t i = deps_map_hash(key) & mask;
    while (m->slots[i].value && m->slots[i].key != key)
        i = (i + 1) & mask;
    if (!m->slots[i].value)
        return NULL;
    void *old = m->slots[i].value;
    m->slots[i].value = NULL;
    m->count--;
    /* backward shift: pull later members of the probe run into the hole */
    for (size_t j = (i + 1) & mask; m->slots[j].value; j = (j + 1) & mask) {
        size_t home = deps_map_hash(m->slots[j].key) & mask;
        /* move j to i when home is not cyclically in (i, j] */
        int in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->slots[i] = m->slots[j];
            m->slots[j].value = NULL;
            i = j;
        }
    }
    return old;
}

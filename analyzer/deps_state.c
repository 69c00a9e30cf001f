/* deps_state.c - the analyzer's shared state: its creation and teardown, the
 * first-failure record, array growth and plan string literals, used by every
 * file of dependency extraction. Nothing here reads events or decides what
 * a block is; teardown must free what a failed run left anywhere. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deps_block.h"
#include "deps_state.h"
#include "grow_array.h"

struct deps_state *deps_state_new(const struct analyze_options *opt, struct analyze_result *res)
{
    struct deps_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->opt = opt;
    s->res = res;
    s->live.next = s->live.prev = &s->live;
    s->live.refs = 1 << 30;
    /* deps_input_open sets it again, with the options' limit */
    mem_budget_init(&s->in.tables, DEPS_MAX_TABLE_BYTES);
    return s;
}

void deps_state_fail(struct deps_state *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    s->failed = 1;
}

int deps_state_charge(struct deps_state *s, uint32_t file, const char *table, uint64_t entries,
                      const char *key, uint64_t bytes)
{
    if (deps_input_charge(&s->in, file, table, entries, key, bytes) == 0)
        return 0;
    deps_state_fail(s, "%s", s->in.err);
    return -1;
}

void deps_state_uncharge(struct deps_state *s, uint64_t bytes)
{
    mem_budget_uncharge(&s->in.tables, bytes);
}

void *deps_state_grow(struct deps_state *s, void *p, uint32_t *cap, size_t elem)
{
    size_t nc = *cap;
    /* the capacity stays a uint32_t: refused before doubling would wrap it */
    if (*cap > UINT32_MAX / 2 || grow_array(&p, &nc, nc + 1, elem, 8) != 0) {
        deps_state_fail(s, "out of memory");
        return NULL;
    }
    *cap = (uint32_t)nc;
    return p;
}

uint32_t deps_state_literal(struct deps_state *s, const char *str)
{
    uint32_t id = plan_writer_string(s->w, str, strlen(str));
    if (id == UINT32_MAX) {
        deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
        return 0;
    }
    return id;
}

/* Clamped at 0: the origin is the first request start the merge delivered,
 * and a concurrent first request may have begun microseconds before it. */
uint64_t deps_state_since_origin(const struct deps_state *s, uint64_t t_c)
{
    return s->have_origin && t_c > s->origin_c ? t_c - s->origin_c : 0;
}

/* The live ends with what still hangs on them: open blocks, served entries
 * and waiters. */
static void deps_state_free_ends(struct deps_state *s)
{
    for (struct deps_end *e = s->live.next, *nx; e != &s->live; e = nx) {
        nx = e->next;
        if (e->cur)
            deps_block_free(e->cur);
        while (e->served) {
            struct deps_served *sv = e->served;
            e->served = sv->next;
            free(sv);
        }
        while (e->waiters) { /* their blocks are freed with the held ones */
            struct deps_waiter *w = e->waiters;
            e->waiters = w->next;
            free(w);
        }
        free(e);
    }
}

static void deps_state_free_procs(struct deps_state *s)
{
    if (!s->procs)
        return;
    for (uint32_t f = 0; f < s->in.nfiles; f++) {
        for (uint32_t i = 0; i < s->procs[f].nall; i++) {
            if (s->procs[f].all[i]->tail) /* a failed run's: never written */
                deps_block_free(s->procs[f].all[i]->tail);
            free(s->procs[f].all[i]);
        }
        free(s->procs[f].all);
        deps_map_free(&s->procs[f].threads);
        deps_map_free(&s->procs[f].ends);
        for (size_t j = 0; j < s->procs[f].pending_opts.cap; j++)
            free(s->procs[f].pending_opts.slots[j].value);
        deps_map_free(&s->procs[f].pending_opts);
        deps_map_free(&s->procs[f].file_owner);
    }
}

void deps_state_free(struct deps_state *s)
{
    if (!s)
        return;
    if (s->w)
        plan_writer_abort(s->w);
    if (s->blocks_out)
        fclose(s->blocks_out);
    /* free what is left: held blocks, open blocks, ends, threads, maps */
    while (s->nheld) {
        struct deps_block *b = s->held[0];
        deps_block_held_remove(s, b);
        deps_block_free(b);
    }
    free(s->held);
    while (s->npool) {
        struct deps_block *b = s->pool[--s->npool];
        b->ncalls = 0; /* their segments were freed when recycled */
        deps_block_free(b);
    }
    deps_state_free_ends(s);
    deps_state_free_procs(s);
    struct deps_map *ptr_maps[] = {&s->files, &s->rendezvous, &s->label_text, &s->external_peers};
    for (size_t i = 0; i < sizeof ptr_maps / sizeof ptr_maps[0]; i++) {
        for (size_t j = 0; j < ptr_maps[i]->cap; j++)
            free(ptr_maps[i]->slots[j].value);
        deps_map_free(ptr_maps[i]);
    }
    deps_map_free(&s->index);
    deps_map_free(&s->waiting);
    deps_map_free(&s->locks);
    deps_map_free(&s->strings);
    deps_map_free(&s->label_ids);
    deps_map_free(&s->db_endpoints);
    free(s->procs);
    free(s->comps);
    free(s->sched);
    free(s->skews);
    deps_input_close(&s->in);
    free(s);
}

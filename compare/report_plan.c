/* report_plan.c - the plan facts the report shows (report_plan.h): the
 * analysis summary, external calls by address, DB endpoints, components,
 * and which inner-tier blocks served which front-end label, found by
 * following each request's CALL ops from its front-end block. Only counts
 * and copies what the plan says: never estimates, never prints. */
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "plan.h"
#include "report_plan.h"
#include "trace_u64map.h"

static char *report_plan_strdup(const struct plan *p, uint32_t id)
{
    const char *s = plan_string(p, id);
    size_t n = strlen(s ? s : "") + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s ? s : "", n);
    return d;
}

/* External calls, summed per peer address (string id). */
static int report_plan_external(const struct plan *p, struct report_plan_facts *f)
{
    struct trace_u64map map;
    trace_u64map_init(&map);
    int rc = -1;
    for (uint64_t i = 0; i < p->nops; i++) {
        const struct plan_op *o = &p->ops[i];
        if (o->kind != PLAN_OP_EXTERNAL)
            continue;
        int fresh;
        uint32_t *slot =
            trace_u64map_upsert(&map, o->a.external.host, (uint32_t)f->nexternal, &fresh);
        if (!slot)
            goto out;
        if (fresh) {
            void *n = realloc(f->external, (f->nexternal + 1) * sizeof *f->external);
            if (!n)
                goto out;
            f->external = n;
            f->external[f->nexternal] = (struct report_plan_external){0};
            if (!(f->external[f->nexternal++].address = report_plan_strdup(p, o->a.external.host)))
                goto out;
        }
        f->external[*slot].calls++;
        f->external[*slot].recorded_s += (double)o->recorded_ns / 1e9;
    }
    rc = 0;
out:
    trace_u64map_free(&map);
    return rc;
}

/* An op's kind as the report groups them, or -1 (calls, socket options). */
static int report_plan_kind(const struct plan_op *o)
{
    switch (o->kind) {
    case PLAN_OP_CPU:
        return 0;
    case PLAN_OP_FILE:
        return 1;
    case PLAN_OP_EXTERNAL:
    case PLAN_OP_RECV:
    case PLAN_OP_SEND:
        return 2;
    case PLAN_OP_LOCK:
        return 3;
    case PLAN_OP_DB:
        return 4;
    default:
        return -1;
    }
}

/* One (front-end label, component, inner label) entry, counted. */
static int report_plan_count_tier(struct report_plan_facts *f, struct trace_u64map *map,
                                  const struct plan *p, size_t label, const struct plan_block *b)
{
    uint64_t key = ((uint64_t)label << 44) ^ ((uint64_t)b->component << 32) ^ b->label;
    int fresh;
    uint32_t *slot = trace_u64map_upsert(map, key, (uint32_t)f->ntiers, &fresh);
    if (!slot)
        return -1;
    if (fresh) {
        void *n = realloc(f->tiers, (f->ntiers + 1) * sizeof *f->tiers);
        if (!n)
            return -1;
        f->tiers = n;
        f->tiers[f->ntiers] = (struct report_plan_tier){.label = label, .component = b->component};
        if (!(f->tiers[f->ntiers++].inner_label = report_plan_strdup(p, b->label)))
            return -1;
    }
    f->tiers[*slot].blocks++;
    for (uint32_t k = 0; k < b->nops; k++) {
        int kind = report_plan_kind(&p->ops[(uint64_t)b->first_op + k]);
        if (kind >= 0)
            f->tiers[*slot].recorded_s[kind] +=
                (double)p->ops[(uint64_t)b->first_op + k].recorded_ns / 1e9;
    }
    return 0;
}

/* Follows every request's calls: each inner block reached is counted under
 * the request's label; the front-end block's direct calls add their
 * recorded time to call_s. The call graph is acyclic (callees come first
 * in the plan), so a stack of block ids suffices. */
static int report_plan_tiers(const struct plan *p, const size_t *label_index,
                             struct report_plan_facts *f)
{
    struct trace_u64map map;
    trace_u64map_init(&map);
    size_t cap = 64, n = 0;
    uint32_t *stack = malloc(cap * sizeof *stack);
    int rc = -1;
    if (!stack)
        goto out;
    for (uint64_t r = 0; r < p->nrequests; r++) {
        const struct plan_request *q = &p->requests[r];
        size_t label = q->label < p->nstrings ? label_index[q->label] : (size_t)-1;
        if (label == (size_t)-1 || label >= f->nlabels || q->block >= p->nblocks)
            continue;
        stack[0] = q->block;
        n = 1;
        while (n) {
            uint32_t bid = stack[--n];
            const struct plan_block *b = &p->blocks[bid];
            if (bid != q->block && report_plan_count_tier(f, &map, p, label, b))
                goto out;
            for (uint32_t k = 0; k < b->nops; k++) {
                const struct plan_op *o = &p->ops[(uint64_t)b->first_op + k];
                int kind = report_plan_kind(o);
                if (bid == q->block && kind >= 0)
                    f->front_s[label * REPORT_PLAN_NKINDS + (size_t)kind] +=
                        (double)o->recorded_ns / 1e9;
                if (o->kind != PLAN_OP_CALL || o->a.call.callee_block >= bid)
                    continue;
                uint32_t callee = p->blocks[o->a.call.callee_block].component;
                if (bid == q->block && callee < f->ncomponents)
                    f->call_s[label * f->ncomponents + callee] += (double)o->recorded_ns / 1e9;
                if (grow_array((void **)&stack, &cap, n + 1, sizeof *stack, 64) != 0)
                    goto out;
                stack[n++] = o->a.call.callee_block;
            }
        }
    }
    rc = 0;
out:
    free(stack);
    trace_u64map_free(&map);
    return rc;
}

int report_plan_facts_build(const struct plan *p, const size_t *label_index, size_t nlabels,
                            struct report_plan_facts *f)
{
    memset(f, 0, sizeof *f);
    f->coverage = p->coverage;
    f->unmatched_bytes = p->unmatched_bytes;
    f->nviolations = p->nviolations;
    f->nblocks = p->nblocks;
    f->nlabels = nlabels;
    for (uint32_t b = 0; b < p->nblocks; b++)
        f->nflagged += (p->blocks[b].flags & PLAN_BLOCK_VIOLATION) != 0;
    f->components = calloc(p->ncomponents + 1, sizeof *f->components);
    f->db_endpoints = calloc(p->ndb_endpoints + 1, sizeof *f->db_endpoints);
    f->call_s = calloc(nlabels * p->ncomponents + 1, sizeof *f->call_s);
    f->front_s = calloc(nlabels * REPORT_PLAN_NKINDS + 1, sizeof *f->front_s);
    if (!f->front_s || !f->components || !f->db_endpoints || !f->call_s ||
        !(f->violations_text = report_plan_strdup(p, p->violations_text)))
        goto oom;
    for (uint32_t c = 0; c < p->ncomponents; c++) {
        const struct plan_component *pc = &p->components[c];
        struct report_plan_component *rc = &f->components[f->ncomponents++];
        rc->workers = pc->workers;
        rc->frontend = pc->is_frontend;
        if (!(rc->name = report_plan_strdup(p, pc->name)) ||
            !(rc->host = report_plan_strdup(p, pc->host)))
            goto oom;
    }
    for (uint32_t e = 0; e < p->ndb_endpoints; e++)
        if (!(f->db_endpoints[f->ndb_endpoints++] =
                  report_plan_strdup(p, p->db_endpoints[e].address)))
            goto oom;
    if (report_plan_external(p, f) || report_plan_tiers(p, label_index, f))
        goto oom;
    return 0;
oom:
    report_plan_facts_free(f);
    return -1;
}

void report_plan_facts_free(struct report_plan_facts *f)
{
    for (size_t i = 0; i < f->ncomponents; i++) {
        free(f->components[i].name);
        free(f->components[i].host);
    }
    for (size_t i = 0; i < f->nexternal; i++)
        free(f->external[i].address);
    for (size_t i = 0; i < f->ndb_endpoints; i++)
        free(f->db_endpoints[i]);
    for (size_t i = 0; i < f->ntiers; i++)
        free(f->tiers[i].inner_label);
    free(f->components);
    free(f->external);
    free(f->db_endpoints);
    free(f->tiers);
    free(f->call_s);
    free(f->front_s);
    free(f->violations_text);
    memset(f, 0, sizeof *f);
}

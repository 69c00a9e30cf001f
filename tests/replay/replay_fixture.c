/* replay_fixture.c - builder for hand-made replay plans (see replay_fixture.h). */
#include "replay_fixture.h"

#include <stdlib.h>
#include <string.h>

/* Room for element n of an array of n: the array grows to the next power
 * of two when n is one (growing by one element made plans of 10^4 ops
 * quadratic, minutes under ASan). */
static void *fixture_grow(void *v, uint64_t n, size_t size)
{
    if (n & (n - 1))
        return v; /* n is not a power of two: the last growth left room */
    void *r = realloc(v, (size_t)(n ? 2 * n : 1) * size);
    if (!r)
        abort();
    return r;
}

struct plan *fixture_plan_new(void)
{
    struct plan *p = calloc(1, sizeof *p);
    if (!p)
        abort();
    p->version_major = PLAN_FORMAT_MAJOR;
    p->version_minor = PLAN_FORMAT_MINOR;
    p->strings = fixture_grow(NULL, 0, sizeof *p->strings);
    p->strings[0] = strdup("");
    p->nstrings = 1;
    return p;
}

uint32_t fixture_string(struct plan *p, const char *s)
{
    for (uint32_t i = 0; i < p->nstrings; i++)
        if (!strcmp(p->strings[i], s))
            return i;
    p->strings = fixture_grow(p->strings, p->nstrings, sizeof *p->strings);
    p->strings[p->nstrings] = strdup(s);
    return p->nstrings++;
}

uint32_t fixture_component(struct plan *p, const char *name, uint32_t workers, int frontend)
{
    p->components = fixture_grow(p->components, p->ncomponents, sizeof *p->components);
    struct plan_component *c = &p->components[p->ncomponents];
    memset(c, 0, sizeof *c);
    c->name = fixture_string(p, name);
    c->workers = workers;
    c->is_frontend = (uint8_t)frontend;
    return p->ncomponents++;
}

uint32_t fixture_file(struct plan *p, uint64_t initial_size)
{
    p->files = fixture_grow(p->files, p->nfiles, sizeof *p->files);
    p->files[p->nfiles].path = 0;
    p->files[p->nfiles].initial_size = initial_size;
    return p->nfiles++;
}

uint32_t fixture_lock(struct plan *p)
{
    p->locks = fixture_grow(p->locks, p->nlocks, sizeof *p->locks);
    memset(&p->locks[p->nlocks], 0, sizeof p->locks[0]);
    p->locks[p->nlocks].recorded_id = p->nlocks + 1;
    return p->nlocks++;
}

uint32_t fixture_block(struct plan *p, uint32_t component, const char *label)
{
    p->blocks = fixture_grow(p->blocks, p->nblocks, sizeof *p->blocks);
    struct plan_block *b = &p->blocks[p->nblocks];
    memset(b, 0, sizeof *b);
    b->component = component;
    b->label = label ? fixture_string(p, label) : 0;
    b->first_op = (uint32_t)p->nops;
    return p->nblocks++;
}

void fixture_op(struct plan *p, struct plan_op op)
{
    p->ops = fixture_grow(p->ops, p->nops, sizeof *p->ops);
    p->ops[p->nops++] = op;
    p->blocks[p->nblocks - 1].nops++;
}

void fixture_call(struct plan *p, uint32_t callee, const int32_t *segs, uint32_t nsegs,
                  uint32_t more, uint16_t flags)
{
    struct plan_op o = {.kind = PLAN_OP_CALL, .flags = flags};
    o.a.call.callee_block = callee;
    o.a.call.first_segment = (uint32_t)p->nsegments;
    o.a.call.nsegments = nsegs;
    for (uint32_t i = 0; i < nsegs; i++) {
        p->segments = fixture_grow(p->segments, p->nsegments, sizeof *p->segments);
        struct plan_segment *s = &p->segments[p->nsegments++];
        s->dir = segs[i] < 0;
        s->bytes = (uint32_t)(segs[i] < 0 ? -segs[i] : segs[i]);
        s->flags = (more >> i) & 1 ? PLAN_SEG_MORE : 0;
    }
    fixture_op(p, o);
}

void fixture_request(struct plan *p, uint32_t block, uint64_t arrival_ns, uint32_t session,
                     uint64_t think_ns)
{
    p->requests = fixture_grow(p->requests, p->nrequests, sizeof *p->requests);
    struct plan_request *r = &p->requests[p->nrequests++];
    memset(r, 0, sizeof *r);
    r->block = block;
    r->arrival_ns = arrival_ns;
    r->label = p->blocks[block].label;
    r->session = session;
    r->think_ns = think_ns;
}

void fixture_plan_free(struct plan *p)
{
    for (uint32_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->components);
    free(p->files);
    free(p->locks);
    free(p->blocks);
    free(p->ops);
    free(p->segments);
    free(p->requests);
    free(p);
}

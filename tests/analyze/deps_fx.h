/* deps_fx.h - a bare analyzer state for unit tests of its parts
 * (test_analyze_pair.c, test_analyze_skew.c): trace files on given hosts,
 * with their processes' tables, and no input, plan or events. Header-only
 * (static functions): each test program includes it once. */
#ifndef PREPLAY_TEST_DEPS_FX_H
#define PREPLAY_TEST_DEPS_FX_H

#include <stdint.h>
#include <stdlib.h>

#include "deps_state.h"

struct deps_fx {
    struct analyze_options opt;
    struct analyze_result res;
    struct deps_state *s;
};

/* nfiles trace files, file f on host hosts[f] (hosts numbered from 0, below
 * nhosts). NULL when out of memory. */
static struct deps_fx *deps_fx_new(uint32_t nfiles, const uint32_t *hosts, uint32_t nhosts)
{
    struct deps_fx *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->opt.grace_ns = 2000000000ull;
    f->opt.window_ns = 200000000ull;
    f->s = deps_state_new(&f->opt, &f->res);
    if (!f->s)
        goto fail;
    struct deps_state *s = f->s;
    s->in.files = calloc(nfiles, sizeof *s->in.files);
    s->in.hosts = calloc(nhosts, sizeof *s->in.hosts);
    s->procs = calloc(nfiles, sizeof *s->procs);
    if (!s->in.files || !s->in.hosts || !s->procs)
        goto fail;
    s->in.nfiles = nfiles;
    s->in.nhosts = nhosts;
    for (uint32_t i = 0; i < nfiles; i++) {
        s->in.files[i].host = hosts[i];
        deps_map_init(&s->procs[i].threads);
        deps_map_init(&s->procs[i].ends);
        deps_map_init(&s->procs[i].pending_opts);
    }
    return f;
fail:
    deps_state_free(f->s);
    free(f);
    return NULL;
}

static void deps_fx_free(struct deps_fx *f)
{
    if (!f)
        return;
    deps_state_free(f->s);
    free(f);
}

#endif

/* info_plan.c - `preplay info` on a replay plan (from preplay analyze):
 * requests and time per resource (cpu, file, net, lock, db) per label,
 * components, coverage, unmatched bytes and model violations, as text or
 * JSON (docs/preplay-info.md). The plan is loaded whole, as the replayer
 * loads it. A plan that cannot be read is one line on stderr and exit 1,
 * never a partial summary. */
#include "info_plan.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "plan.h"

/* Time per resource type of a block, in ns (docs/preplay-info.md):
 * cpu = CPU ops' cpu_ns; file, lock, db = recorded_ns of those ops;
 * net = recorded_ns of RECV, SEND, SOCKOPT and EXTERNAL ops, plus for each
 * CALL the part of its recorded time not explained by the callee block's
 * recorded response time (max(0, call - callee)): the callee's own work is
 * counted through the callee block itself. */
enum {
    INFO_PLAN_RES_CPU,
    INFO_PLAN_RES_FILE,
    INFO_PLAN_RES_NET,
    INFO_PLAN_RES_LOCK,
    INFO_PLAN_RES_DB,
    INFO_PLAN_RES_COUNT
};
static const char *const info_plan_res_keys[INFO_PLAN_RES_COUNT] = {"cpu_s", "file_s", "net_s",
                                                                    "lock_s", "db_s"};
static const char *const info_plan_res_names[INFO_PLAN_RES_COUNT] = {"cpu", "file", "net", "lock",
                                                                     "db"};

struct info_plan_by_label {
    uint32_t label; /* string id */
    uint64_t requests;
    double ns[INFO_PLAN_RES_COUNT];
};

static int info_plan_cmp_label(const void *a, const void *b)
{
    const struct info_plan_by_label *x = a, *y = b;
    if (x->requests != y->requests)
        return x->requests < y->requests ? 1 : -1;
    return x->label < y->label ? -1 : x->label > y->label;
}

/* Per block, the time of its own ops plus (recursively) of its callee
 * blocks. Callees always precede their callers (PLAN.md), so one forward
 * pass computes it. */
static double *info_plan_block_resources(const struct plan *p)
{
    double *res = inspect_xalloc(calloc((size_t)p->nblocks * INFO_PLAN_RES_COUNT + 1, sizeof *res));
    for (uint32_t b = 0; b < p->nblocks; b++) {
        double *r = res + (size_t)b * INFO_PLAN_RES_COUNT;
        const struct plan_block *blk = &p->blocks[b];
        for (uint32_t i = 0; i < blk->nops; i++) {
            const struct plan_op *o = &p->ops[blk->first_op + i];
            switch (o->kind) {
            case PLAN_OP_CPU:
                r[INFO_PLAN_RES_CPU] += (double)o->a.cpu_ns;
                break;
            case PLAN_OP_FILE:
                r[INFO_PLAN_RES_FILE] += (double)o->recorded_ns;
                break;
            case PLAN_OP_LOCK:
                r[INFO_PLAN_RES_LOCK] += (double)o->recorded_ns;
                break;
            case PLAN_OP_DB:
                r[INFO_PLAN_RES_DB] += (double)o->recorded_ns;
                break;
            case PLAN_OP_CALL: {
                uint32_t c = o->a.call.callee_block;
                const double *cr = res + (size_t)c * INFO_PLAN_RES_COUNT;
                for (int k = 0; k < INFO_PLAN_RES_COUNT; k++)
                    r[k] += cr[k];
                uint64_t callee = p->blocks[c].recorded_ns;
                if (o->recorded_ns > callee)
                    r[INFO_PLAN_RES_NET] += (double)(o->recorded_ns - callee);
                break;
            }
            default: /* RECV, SEND, SOCKOPT, EXTERNAL */
                r[INFO_PLAN_RES_NET] += (double)o->recorded_ns;
                break;
            }
        }
    }
    return res;
}

static const char *info_plan_label_name(const struct plan *p, uint32_t id)
{
    return id ? plan_string(p, id) : "(no label)";
}

static json_t *info_plan_json_resources(const double ns[INFO_PLAN_RES_COUNT], double divide)
{
    json_t *o = json_object();
    for (int k = 0; k < INFO_PLAN_RES_COUNT; k++)
        json_object_set_new(o, info_plan_res_keys[k],
                            json_real(divide > 0 ? ns[k] / 1e9 / divide : 0));
    return o;
}

/* Per label, sorted by requests: its requests and the time per resource of
 * their blocks; *n labels. */
static struct info_plan_by_label *info_plan_sum_labels(const struct plan *p, size_t *n)
{
    double *res = info_plan_block_resources(p);
    uint32_t *slot = inspect_xalloc(calloc(p->nstrings, sizeof *slot)); /* label id -> index + 1 */
    struct info_plan_by_label *labels = NULL;
    size_t nlabels = 0;
    for (uint64_t i = 0; i < p->nrequests; i++) {
        const struct plan_request *r = &p->requests[i];
        if (!slot[r->label]) {
            labels = inspect_xalloc(realloc(labels, (nlabels + 1) * sizeof *labels));
            memset(&labels[nlabels], 0, sizeof *labels);
            labels[nlabels].label = r->label;
            slot[r->label] = (uint32_t)++nlabels;
        }
        struct info_plan_by_label *l = &labels[slot[r->label] - 1];
        l->requests++;
        for (int k = 0; k < INFO_PLAN_RES_COUNT; k++)
            l->ns[k] += res[(size_t)r->block * INFO_PLAN_RES_COUNT + k];
    }
    inspect_sort(labels, nlabels, sizeof *labels, info_plan_cmp_label);
    free(slot);
    free(res);
    *n = nlabels;
    return labels;
}

/* What both renderings show. */
struct info_plan_summary {
    const char *path;
    const struct plan *p;
    const struct info_plan_by_label *labels;
    size_t nlabels;
    uint32_t flagged;  /* blocks flagged as violations */
    const char *vtext; /* the violations text, or NULL */
};

static json_t *info_plan_json_components(const struct plan *p)
{
    json_t *cj = json_array();
    for (uint32_t i = 0; i < p->ncomponents; i++) {
        const struct plan_component *c = &p->components[i];
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(plan_string(p, c->name)));
        json_object_set_new(x, "host", json_string(plan_string(p, c->host)));
        json_object_set_new(x, "workers", json_integer(c->workers));
        json_object_set_new(x, "db_conns", json_integer(c->db_conns));
        json_object_set_new(x, "listen_port", json_integer(c->listen_port));
        json_object_set_new(x, "prefork", json_boolean(c->prefork));
        json_object_set_new(x, "frontend", json_boolean(c->is_frontend));
        json_object_set_new(x, "event_loop", json_boolean(c->event_loop));
        json_array_append_new(cj, x);
    }
    return cj;
}

static void info_plan_print_json(const struct info_plan_summary *s)
{
    const struct plan *p = s->p;
    json_t *o = json_object();
    json_object_set_new(o, "file", json_string(s->path));
    json_object_set_new(o, "format_version",
                        json_integer(p->version_major * 1000 + p->version_minor));
    json_object_set_new(o, "recording_id", inspect_json_str(p->recording_id));
    json_object_set_new(o, "requests", json_integer((json_int_t)p->nrequests));
    json_object_set_new(o, "blocks", json_integer(p->nblocks));
    json_object_set_new(o, "ops", json_integer((json_int_t)p->nops));
    json_object_set_new(o, "violation_blocks", json_integer(s->flagged));
    json_t *lj = json_object(), *rj = json_object(), *mj = json_object();
    for (size_t i = 0; i < s->nlabels; i++) {
        const struct info_plan_by_label *l = &s->labels[i];
        const char *name = info_plan_label_name(p, l->label);
        json_object_set_new(lj, name, json_integer((json_int_t)l->requests));
        json_object_set_new(rj, name, info_plan_json_resources(l->ns, 1));
        json_object_set_new(mj, name, info_plan_json_resources(l->ns, (double)l->requests));
    }
    json_object_set_new(o, "labels", lj);
    json_object_set_new(o, "coverage", json_real(p->coverage));
    json_object_set_new(o, "unmatched_bytes", json_integer((json_int_t)p->unmatched_bytes));
    json_object_set_new(o, "violations", json_integer(p->nviolations));
    json_object_set_new(o, "violations_text", json_string(s->vtext ? s->vtext : ""));
    json_object_set_new(o, "resources_by_label", rj);
    json_object_set_new(o, "resources_per_request_by_label", mj);
    json_object_set_new(o, "components", info_plan_json_components(p));
    json_object_set_new(o, "skipped_records", json_integer((json_int_t)p->skipped_records));
    json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("\n");
    json_decref(o);
}

static void info_plan_print_text(const struct info_plan_summary *s)
{
    const struct plan *p = s->p;
    printf("plan %s: format %u.%u, recording %s\n", s->path, p->version_major, p->version_minor,
           p->recording_id[0] ? p->recording_id : "(none)");
    printf("%" PRIu64 " requests, %u blocks (%u flagged as violations), %" PRIu64
           " ops, %u components\n",
           p->nrequests, p->nblocks, s->flagged, p->nops, p->ncomponents);
    for (uint32_t i = 0; i < p->ncomponents; i++) {
        const struct plan_component *c = &p->components[i];
        printf("  %-16s on %s: %u %s, %u DB connections, port %u%s\n", plan_string(p, c->name),
               plan_string(p, c->host), c->workers,
               c->event_loop ? "event loops"
               : c->prefork  ? "worker processes"
                             : "worker threads",
               c->db_conns, c->listen_port, c->is_frontend ? ", front end" : "");
    }
    printf("coverage %.2f%%, unmatched bytes %" PRIu64 ", violations %u\n", p->coverage * 100,
           p->unmatched_bytes, p->nviolations);
    if (s->nlabels)
        printf("time per resource by label: total seconds (mean ms per request)\n");
    for (size_t i = 0; i < s->nlabels; i++) {
        const struct info_plan_by_label *l = &s->labels[i];
        printf("  %-24s %8" PRIu64 " req", info_plan_label_name(p, l->label), l->requests);
        for (int k = 0; k < INFO_PLAN_RES_COUNT; k++)
            printf("  %s %.6f (%.3f)", info_plan_res_names[k], l->ns[k] / 1e9,
                   l->ns[k] / 1e6 / (double)l->requests);
        printf("\n");
    }
    if (s->vtext && s->vtext[0]) {
        printf("violations:\n  ");
        for (const char *c = s->vtext; *c; c++) { /* indent every line */
            if (*c != '\n')
                putchar(*c);
            else if (c[1])
                fputs("\n  ", stdout);
        }
        printf("\n");
    }
    if (p->skipped_records)
        printf("%" PRIu64 " records of a newer format minor version were skipped\n",
               p->skipped_records);
}

int info_plan_print(const char *path, int as_json)
{
    char err[1024];
    struct plan *p = plan_read(path, err, sizeof err);
    if (!p) {
        fprintf(stderr, "preplay: %s\n", err);
        return INSPECT_EXIT_DAMAGED;
    }
    struct info_plan_summary s = {.path = path, .p = p};
    struct info_plan_by_label *labels = info_plan_sum_labels(p, &s.nlabels);
    s.labels = labels;
    for (uint32_t b = 0; b < p->nblocks; b++)
        s.flagged += (p->blocks[b].flags & PLAN_BLOCK_VIOLATION) != 0;
    s.vtext = plan_string(p, p->violations_text);
    if (as_json)
        info_plan_print_json(&s);
    else
        info_plan_print_text(&s);
    free(labels);
    plan_free(p);
    if (fflush(stdout) != 0)
        return INSPECT_EXIT_DAMAGED;
    return 0;
}

/* dump.c - `preplay dump`: every event of a trace file, one per line, with
 * names for types, operations and flags, interned strings resolved and,
 * with --stacks records, each event's stack by symbol; text or JSON lines
 * (docs/preplay-dump.md). It streams the trace through the reader and
 * keeps only the stacks and symbols seen so far. Exit status: 0 ok,
 * 1 damaged or unreadable trace, 2 usage, 3 damaged but salvaged. Damage
 * is always reported on stderr: it must never end a partial dump as if it
 * were complete. */
#include <math.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect_cli.h"
#include "inspect.h"
#include "mem_budget.h"
#include "trace_file.h"
#include "trace_u64map.h"

#define J_INT(o, k, v) json_object_set_new(o, k, json_integer((json_int_t)(v)))

static void dump_set_string(json_t *o, const char *key, const char *s, uint32_t len)
{
    json_t *j = json_stringn(s, len);
    if (j) {
        json_object_set_new(o, key, j);
        return;
    }
    /* not UTF-8: hex so the line stays valid JSON */
    char *hex = inspect_xalloc(malloc(2 * (size_t)len + 1));
    for (uint32_t i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)s[i]);
    char k[64];
    snprintf(k, sizeof k, "%s_hex", key);
    json_object_set_new(o, k, json_string(hex));
    free(hex);
}

static void dump_resolve(json_t *o, const char *key, struct trace_reader *r, uint32_t id)
{
    uint32_t len;
    const char *s = id ? trace_reader_string(r, id, &len) : NULL;
    if (s)
        dump_set_string(o, key, s, len);
}

/* "flags": the names of the set flag bits (a bit without a name as its value). */
static void dump_json_flags(json_t *o, uint16_t flags)
{
    json_t *f = json_array();
    for (unsigned b = 0; b < 16; b++) {
        if (!(flags & (1u << b)))
            continue;
        const char *name = trace_event_flag_name(b);
        if (name)
            json_array_append_new(f, json_string(name));
        else
            json_array_append_new(f, json_integer(1 << b));
    }
    json_object_set_new(o, "flags", f);
}

static void dump_json_file(json_t *o, const struct trace_file_event *f, struct trace_reader *r)
{
    J_INT(o, "fd", f->fd);
    if (f->path_id) {
        J_INT(o, "path_id", f->path_id);
        dump_resolve(o, "path", r, f->path_id);
    }
    J_INT(o, "dev", f->dev);
    J_INT(o, "ino", f->ino);
    J_INT(o, "offset", f->offset);
    J_INT(o, "size", f->size);
    J_INT(o, "result", f->result);
    J_INT(o, "file_size", f->file_size);
    if (f->open_flags)
        J_INT(o, "open_flags", f->open_flags);
    if (f->fd2 != -1)
        J_INT(o, "fd2", f->fd2);
}

static void dump_json_net(json_t *o, const struct trace_net_event *n)
{
    J_INT(o, "fd", n->fd);
    J_INT(o, "conn_id", n->conn_id);
    J_INT(o, "size", n->size);
    J_INT(o, "result", n->result);
    if (n->msg_flags)
        J_INT(o, "msg_flags", n->msg_flags);
    if (n->nmsgs)
        J_INT(o, "nmsgs", n->nmsgs);
    if (n->queued_us)
        J_INT(o, "queued_us", n->queued_us);
}

static void dump_json_conn(json_t *o, const struct trace_conn_event *c)
{
    char ep[80];
    J_INT(o, "fd", c->fd);
    J_INT(o, "conn_id", c->conn_id);
    json_object_set_new(o, "proto", json_string(inspect_proto_name(c->proto)));
    J_INT(o, "family", c->family);
    inspect_format_endpoint(ep, sizeof ep, c->family, c->local_addr, c->local_port);
    if (ep[0])
        json_object_set_new(o, "local", json_string(ep));
    inspect_format_endpoint(ep, sizeof ep, c->family, c->remote_addr, c->remote_port);
    if (ep[0])
        json_object_set_new(o, "remote", json_string(ep));
    if (c->unix_inode || c->unix_peer_inode) {
        J_INT(o, "unix_inode", c->unix_inode);
        J_INT(o, "unix_peer_inode", c->unix_peer_inode);
    }
    J_INT(o, "result", c->result);
}

static void dump_json_lock(json_t *o, const struct trace_lock_event *l)
{
    static const char *const kinds[] = {"?",     "mutex", "rwlock",   "flock",
                                        "fcntl", "ofd",   "semaphore"};
    json_object_set_new(o, "kind",
                        json_string(l->kind < sizeof kinds / sizeof *kinds ? kinds[l->kind] : "?"));
    json_object_set_new(o, "mode",
                        json_string(l->mode == TRACE_LOCK_SHARED      ? "shared"
                                    : l->mode == TRACE_LOCK_EXCLUSIVE ? "exclusive"
                                                                      : "?"));
    J_INT(o, "lock_id", l->lock_id);
    J_INT(o, "result", l->result);
    if (l->start || l->len) {
        J_INT(o, "start", l->start);
        J_INT(o, "len", l->len);
    }
}

static void dump_json_db(json_t *o, const struct trace_db_event *d, struct trace_reader *r)
{
    json_object_set_new(o, "source",
                        json_string(d->source == TRACE_DB_CAPI   ? "capi"
                                    : d->source == TRACE_DB_WIRE ? "wire"
                                                                 : "?"));
    J_INT(o, "db_conn_id", d->db_conn_id);
    if (d->query_id) {
        J_INT(o, "query_id", d->query_id);
        dump_resolve(o, "query", r, d->query_id);
    }
    if (d->params_id) {
        J_INT(o, "params_id", d->params_id);
        dump_resolve(o, "params", r, d->params_id);
    }
    if (d->stmt_id)
        J_INT(o, "stmt_id", d->stmt_id);
    J_INT(o, "rows", d->rows);
    J_INT(o, "bytes", d->bytes);
    J_INT(o, "error", d->error);
    if (d->dialect != TRACE_DB_MYSQL) {
        json_object_set_new(o, "dialect", json_string(trace_db_dialect_name(d->dialect)));
        if (d->dialect == TRACE_DB_POSTGRESQL && d->error) {
            char state[6];
            trace_db_sqlstate_text(d->error, state);
            json_object_set_new(o, "sqlstate", json_string(state));
        }
    }
    if (d->query_len) /* cut (flag "cut"): the real lengths */
        J_INT(o, "query_len", d->query_len);
    if (d->params_len)
        J_INT(o, "params_len", d->params_len);
}

/* A STACK record: its id and frames as hex addresses. */
static void dump_json_stack(json_t *o, const struct trace_event *ev)
{
    J_INT(o, "id", ev->u.stack.id);
    json_t *frames = json_array();
    const uint64_t *f = ev->data;
    for (uint32_t i = 0; i < ev->u.stack.nframes; i++) {
        char hex[24];
        snprintf(hex, sizeof hex, "0x%" PRIx64, f[i]);
        json_array_append_new(frames, json_string(hex));
    }
    json_object_set_new(o, "frames", frames);
}

/* One event as a JSON object: the fields every event has, then those of
 * its type (key order is the output order of both text and JSON lines). */
/* COUNTERS (FORMAT.md §9): window_ns, tick_ns and values {name: number
 * or null}, in the record's order. */
static void dump_json_counters(json_t *o, const struct trace_event *ev)
{
    J_INT(o, "window_ns", ev->u.counters.window_ns);
    J_INT(o, "tick_ns", ev->u.counters.tick_ns);
    struct trace_counter *c = malloc((ev->u.counters.nvalues + 1) * sizeof *c);
    json_t *v = json_object();
    size_t n = c ? trace_counters_decode(ev, c) : 0;
    for (size_t i = 0; i < n; i++) {
        char name[TRACE_MAX_COUNTER_NAME + 1];
        memcpy(name, c[i].name, c[i].name_len);
        name[c[i].name_len] = 0;
        json_object_set_new(v, name, isnan(c[i].value) ? json_null() : json_real(c[i].value));
    }
    free(c);
    json_object_set_new(o, "values", v);
}

static json_t *dump_event_json(const struct trace_event *ev, struct trace_reader *r, uint32_t pid)
{
    json_t *o = json_object();
    J_INT(o, "ts", ev->ts_ns);
    J_INT(o, "tid", ev->tid);
    json_object_set_new(o, "type", json_string(trace_event_type_name(ev->type)));
    const char *op = trace_event_op_name(ev->type, ev->op);
    if (op)
        json_object_set_new(o, "op", json_string(op));
    else if (ev->op)
        J_INT(o, "op", ev->op);
    if (pid) /* a directory's traces merged: whose event this is */
        J_INT(o, "pid", pid);
    J_INT(o, "dur", ev->dur_ns);
    if (ev->flags)
        dump_json_flags(o, ev->flags);
    if (ev->stack_id)
        J_INT(o, "stack_id", ev->stack_id);
    switch (ev->type) {
    case TRACE_EV_THREAD_START:
    case TRACE_EV_THREAD_EXIT:
        if (ev->u.thread.parent_tid)
            J_INT(o, "parent_tid", ev->u.thread.parent_tid);
        break;
    case TRACE_EV_FILE:
        dump_json_file(o, &ev->u.file, r);
        break;
    case TRACE_EV_NET:
        dump_json_net(o, &ev->u.net);
        break;
    case TRACE_EV_CONN:
        dump_json_conn(o, &ev->u.conn);
        break;
    case TRACE_EV_SOCKOPT:
        J_INT(o, "fd", ev->u.sockopt.fd);
        J_INT(o, "level", ev->u.sockopt.level);
        J_INT(o, "name", ev->u.sockopt.name);
        J_INT(o, "value", ev->u.sockopt.value);
        J_INT(o, "conn_id", ev->u.sockopt.conn_id);
        break;
    case TRACE_EV_LOCK:
        dump_json_lock(o, &ev->u.lock);
        break;
    case TRACE_EV_DB:
        dump_json_db(o, &ev->u.db, r);
        break;
    case TRACE_EV_LABEL:
        J_INT(o, "conn_id", ev->u.label.conn_id);
        J_INT(o, "label_id", ev->u.label.label_id);
        dump_resolve(o, "label", r, ev->u.label.label_id);
        break;
    case TRACE_EV_LOSS:
        J_INT(o, "count", ev->u.loss.count);
        J_INT(o, "from_ns", ev->u.loss.from_ns);
        J_INT(o, "to_ns", ev->u.loss.to_ns);
        json_object_set_new(o, "reason", json_string(trace_loss_reason_name(ev->u.loss.reason)));
        break;
    case TRACE_EV_STRING:
        J_INT(o, "id", ev->u.string.id);
        J_INT(o, "len", ev->u.string.len);
        dump_set_string(o, "value", ev->data ? ev->data : "", ev->u.string.len);
        break;
    case TRACE_EV_STACK:
        dump_json_stack(o, ev);
        break;
    case TRACE_EV_CONTROL:
        J_INT(o, "arg0", ev->u.control.arg0);
        J_INT(o, "arg1", ev->u.control.arg1);
        if (ev->op == TRACE_CTL_EXEC && ev->u.control.arg0 > 0 && ev->u.control.arg0 <= UINT32_MAX)
            dump_resolve(o, "path", r, (uint32_t)ev->u.control.arg0);
        break;
    case TRACE_EV_COUNTERS:
        dump_json_counters(o, ev);
        break;
    default:
        break;
    }
    return o;
}

/* Text line: "ts tid type op k=v ..." built from the same JSON object. */
static void dump_print_event_text(json_t *o)
{
    printf("%" JSON_INTEGER_FORMAT " %" JSON_INTEGER_FORMAT " %s",
           json_integer_value(json_object_get(o, "ts")),
           json_integer_value(json_object_get(o, "tid")),
           json_string_value(json_object_get(o, "type")));
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (!strcmp(key, "ts") || !strcmp(key, "tid") || !strcmp(key, "type"))
            continue;
        if (json_is_integer(v)) {
            printf(" %s=%" JSON_INTEGER_FORMAT, key, json_integer_value(v));
        } else if (json_is_string(v)) {
            const char *s = json_string_value(v);
            if (!strcmp(key, "op"))
                printf(" %s", s);
            else if (strpbrk(s, " \t\n\"\\") || !*s) {
                json_t *q = json_string(s);
                char *enc = json_dumps(q, JSON_ENCODE_ANY);
                printf(" %s=%s", key, enc ? enc : "?");
                free(enc);
                json_decref(q);
            } else
                printf(" %s=%s", key, s);
        } else {
            char *enc = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            printf(" %s=%s", key, enc ? enc : "?");
            free(enc);
        }
    }
    printf("\n");
}

/* --stacks: frames per stack id and a symbol per address, from the STACK
 * records seen so far, so dump can print each event's stack by name. Memory
 * grows with distinct stacks and addresses, not with events. */
struct dump_stacks {
    struct trace_u64map symbol_of; /* address -> string id of its symbol */
    struct trace_u64map index_of;  /* stack id -> index into frames/nframes */
    uint64_t **frames;
    uint32_t *nframes;
    size_t n, cap;
    /* at most DUMP_MAX_STACK_BYTES of frames and index; full: a STACK was
     * refused (said once), later ones are not kept */
    struct mem_budget mem;
    int full;
    const char *path;
};

/* The most the stack table of one trace holds: 10000 distinct STACKs of
 * 4096 frames (32 KB each, a few bytes compressed) made dump hold 330 MB,
 * and a trace may carry 2^32 of them. Beyond, one line says so, the exit
 * status is 1, and events still print, their later stacks unresolved. */
#define DUMP_MAX_STACK_BYTES (256ull << 20)

static void dump_stacks_init(struct dump_stacks *st, const char *path)
{
    memset(st, 0, sizeof *st);
    trace_u64map_init(&st->symbol_of);
    trace_u64map_init(&st->index_of);
    mem_budget_init(&st->mem, DUMP_MAX_STACK_BYTES);
    st->path = path;
}

/* Room for what ev adds (a symbol: its map slot; a stack: its frames,
 * map slot and index): 0, or -1 (said once) beyond DUMP_MAX_STACK_BYTES. */
static int dump_stacks_charge(struct dump_stacks *st, const struct trace_event *ev)
{
    uint64_t add = 32; /* a map slot, with the map's slack */
    if (ev->op != TRACE_STACK_SYMBOL) {
        add += (uint64_t)ev->u.stack.nframes * sizeof(uint64_t);
        if (st->n == st->cap)
            add += (st->cap ? st->cap : 64) * (sizeof *st->frames + sizeof *st->nframes);
    }
    if (!st->full && mem_budget_charge(&st->mem, add) == 0)
        return 0;
    if (!st->full)
        fprintf(stderr,
                "preplay: %s: STACK id %u: the stack table (%zu stacks) would pass its limit of "
                "%llu bytes; later stacks are not resolved\n",
                st->path, ev->u.stack.id, st->n + 1, (unsigned long long)DUMP_MAX_STACK_BYTES);
    st->full = 1;
    return -1;
}

static void dump_stacks_note(struct dump_stacks *st, const struct trace_event *ev)
{
    const uint64_t *f = ev->data;
    if (ev->type != TRACE_EV_STACK || !f || !ev->u.stack.nframes)
        return;
    int inserted;
    if (ev->op == TRACE_STACK_SYMBOL) {
        if (!trace_u64map_find(&st->symbol_of, f[0]) && dump_stacks_charge(st, ev) != 0)
            return;
        uint32_t *v = trace_u64map_upsert(&st->symbol_of, f[0], ev->u.stack.id, &inserted);
        if (v)
            *v = ev->u.stack.id;
        return;
    }
    if (trace_u64map_find(&st->index_of, ev->u.stack.id) || dump_stacks_charge(st, ev) != 0)
        return; /* a repeat (ring mode) keeps the first */
    uint32_t *idx = trace_u64map_upsert(&st->index_of, ev->u.stack.id, (uint32_t)st->n, &inserted);
    if (!idx || !inserted)
        return;
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 64;
        st->frames = inspect_xalloc(realloc(st->frames, st->cap * sizeof *st->frames));
        st->nframes = inspect_xalloc(realloc(st->nframes, st->cap * sizeof *st->nframes));
    }
    st->frames[st->n] = inspect_xalloc(malloc(ev->u.stack.nframes * sizeof(uint64_t)));
    memcpy(st->frames[st->n], f, ev->u.stack.nframes * sizeof(uint64_t));
    st->nframes[st->n] = ev->u.stack.nframes;
    st->n++;
}

/* Adds "stack": ["symbol+0xoff (lib)", ...] to an event that has one. */
static void dump_stacks_resolve(const struct dump_stacks *st, json_t *o,
                                const struct trace_event *ev, struct trace_reader *r)
{
    if (!ev->stack_id || ev->type == TRACE_EV_STACK)
        return;
    uint32_t *idx = trace_u64map_find(&st->index_of, ev->stack_id);
    if (!idx)
        return;
    json_t *names = json_array();
    for (uint32_t i = 0; i < st->nframes[*idx]; i++) {
        uint64_t addr = st->frames[*idx][i];
        uint32_t *sid = trace_u64map_find(&st->symbol_of, addr);
        uint32_t len = 0;
        const char *name = sid ? trace_reader_string(r, *sid, &len) : NULL;
        if (name) {
            json_array_append_new(names, json_stringn(name, len));
        } else {
            char hex[24];
            snprintf(hex, sizeof hex, "0x%" PRIx64, addr);
            json_array_append_new(names, json_string(hex));
        }
    }
    json_object_set_new(o, "stack", names);
}

static void dump_stacks_free(struct dump_stacks *st)
{
    for (size_t i = 0; i < st->n; i++)
        free(st->frames[i]);
    free(st->frames);
    free(st->nframes);
    trace_u64map_free(&st->symbol_of);
    trace_u64map_free(&st->index_of);
}

static const char dump_usage[] =
    "usage: preplay dump [--json] [--salvage] TRACE|DIR\n"
    "Print every event of a trace file, one per line, with names for types,\n"
    "operations and flags and interned strings resolved. For a trace directory,\n"
    "the events of all its *.trace files merged by time, each with its pid.\n"
    "  --json     one JSON object per line (see docs/preplay-dump.md)\n"
    "  --salvage  on damage, print what precedes it and exit 3 instead of 1\n"
    "Exit: 0 ok, 1 damaged/unreadable trace, 2 usage, 3 damaged but salvaged.\n";

/* One event: its stack resolved (--stacks records), then printed as a text
 * or a JSON line. Returns the JSON object (the caller owns it). */
static json_t *dump_convert(struct dump_stacks *st, const struct trace_event *ev,
                            struct trace_reader *r, uint32_t pid)
{
    dump_stacks_note(st, ev);
    json_t *j = dump_event_json(ev, r, pid);
    dump_stacks_resolve(st, j, ev, r);
    return j;
}

static void dump_print(json_t *j, int as_json)
{
    if (as_json) {
        json_dumpf(j, stdout, JSON_COMPACT);
        putchar('\n');
    } else {
        dump_print_event_text(j);
    }
}

/* The end of one reader: damage, salvage and skipped records said on
 * stderr; the exit status they make (0, DAMAGED or SALVAGED). */
static int dump_reader_end(struct trace_reader *r, int rc)
{
    int status = 0;
    if (rc < 0) {
        fprintf(stderr, "preplay: %s\n", trace_reader_error(r));
        status = INSPECT_EXIT_DAMAGED;
    } else if (trace_reader_warning(r)) {
        fprintf(stderr, "preplay: warning: %s (salvaged: events before the damage were printed)\n",
                trace_reader_warning(r));
        status = INSPECT_EXIT_SALVAGED;
    }
    if (trace_reader_skipped(r))
        fprintf(stderr,
                "preplay: note: %" PRIu64 " records of types this preplay does not know were "
                "skipped (trace written by a newer minor version)\n",
                trace_reader_skipped(r));
    return status;
}

/* DAMAGED over SALVAGED over 0. */
static int dump_worse(int a, int b)
{
    if (a == INSPECT_EXIT_DAMAGED || b == INSPECT_EXIT_DAMAGED)
        return INSPECT_EXIT_DAMAGED;
    return a ? a : b;
}

/* One trace file, in file order. */
static int dump_file(const struct inspect_args *a)
{
    char err[1024];
    struct trace_reader_options o = {.salvage = a->salvage};
    struct trace_reader *r = trace_reader_open(a->target, &o, err, sizeof err);
    if (!r) {
        fprintf(stderr, "preplay: %s\n", err);
        return INSPECT_EXIT_DAMAGED;
    }
    struct trace_event ev;
    struct dump_stacks stacks;
    dump_stacks_init(&stacks, a->target);
    int rc;
    while ((rc = trace_reader_next(r, &ev)) == 1) {
        json_t *j = dump_convert(&stacks, &ev, r, 0);
        dump_print(j, a->json);
        json_decref(j);
    }
    fflush(stdout);
    int status = dump_worse(dump_reader_end(r, rc), stacks.full ? INSPECT_EXIT_DAMAGED : 0);
    trace_reader_close(r);
    dump_stacks_free(&stacks);
    return status;
}

/* ---- a directory: every trace merged by time ------------------------------ */

/* A trace's records are in time order per thread, not across its threads
 * (each thread's ring is drained in turn): an event is held until every
 * trace has been read this far past it, so events out of order by less
 * than this within their file come out in time order. The same bound as
 * `preplay analyze`'s default reordering window; an event later than that
 * is printed late and counted. STRING and STACK records have no time (0):
 * they come out as soon as they are read. */
#define DUMP_WINDOW_NS 200000000ull
/* The most the merge holds (JSON bytes, estimated): beyond, the earliest
 * held event is printed before its window closes (counted late if one
 * before it comes after). A trace whose events all share one time held
 * every event: two traces of 4 GiB strings got `dump DIR` killed in 2 GiB. */
#define DUMP_MAX_HELD_BYTES (64ull << 20)

struct dump_source {
    struct trace_reader *r;
    struct dump_stacks stacks;
    uint32_t pid;
    uint64_t frontier; /* the latest time read from this trace */
    int done;
};

/* An event read and waiting for its turn: ordered by time, then by trace
 * (name order) and by position in it, so equal times keep a stable order. */
struct dump_pending {
    uint64_t ts, seq, bytes;
    json_t *j;
};

struct dump_heap {
    struct dump_pending *v;
    size_t n, cap;
    uint64_t bytes; /* what the held events take, estimated */
};

/* What a converted event takes, roughly: its strings' bytes and 48 per
 * other value (enough to bound what the merge holds, not to account). */
static uint64_t dump_json_bytes(json_t *j)
{
    uint64_t n = 48;
    const char *key;
    json_t *v;
    size_t i;
    if (json_is_string(j))
        n += json_string_length(j);
    else if (json_is_object(j))
        json_object_foreach(j, key, v) n += strlen(key) + dump_json_bytes(v);
    else if (json_is_array(j))
        json_array_foreach(j, i, v) n += dump_json_bytes(v);
    return n;
}

static int dump_pending_before(const struct dump_pending *x, const struct dump_pending *y)
{
    return x->ts != y->ts ? x->ts < y->ts : x->seq < y->seq;
}

static void dump_heap_push(struct dump_heap *h, struct dump_pending p)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 256;
        h->v = inspect_xalloc(realloc(h->v, h->cap * sizeof *h->v));
    }
    h->bytes += p.bytes;
    size_t i = h->n++;
    while (i > 0 && dump_pending_before(&p, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = p;
}

static struct dump_pending dump_heap_pop(struct dump_heap *h)
{
    struct dump_pending top = h->v[0], last = h->v[--h->n];
    h->bytes -= top.bytes;
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && dump_pending_before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!dump_pending_before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

/* The trace read least far (the next to read), or -1 when all are done. */
static long dump_next_source(const struct dump_source *src, size_t n)
{
    long best = -1;
    for (size_t i = 0; i < n; i++)
        if (!src[i].done && (best < 0 || src[i].frontier < src[best].frontier))
            best = (long)i;
    return best;
}

/* Prints the held events no unread event can precede (all when every
 * trace is done); counts those printed after a later one in *late. */
static void dump_release(struct dump_heap *h, long next, const struct dump_source *src, int as_json,
                         uint64_t *last_ts, uint64_t *late)
{
    uint64_t low = next < 0 ? UINT64_MAX : src[next].frontier;
    while (h->n && (next < 0 || h->bytes > DUMP_MAX_HELD_BYTES ||
                    (low >= DUMP_WINDOW_NS && h->v[0].ts <= low - DUMP_WINDOW_NS))) {
        struct dump_pending p = dump_heap_pop(h);
        if (p.ts < *last_ts && p.ts) /* strings and stacks have no time (0) */
            (*late)++;
        else
            *last_ts = p.ts;
        dump_print(p.j, as_json);
        json_decref(p.j);
    }
}

static int dump_dir(const struct inspect_args *a, char **files, size_t n)
{
    struct dump_source *src = inspect_xalloc(calloc(n, sizeof *src));
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        char err[1024];
        struct trace_reader_options o = {.salvage = a->salvage};
        dump_stacks_init(&src[i].stacks, files[i]);
        src[i].r = trace_reader_open(files[i], &o, err, sizeof err);
        if (!src[i].r) { /* the others are still printed */
            fprintf(stderr, "preplay: %s\n", err);
            status = INSPECT_EXIT_DAMAGED;
            src[i].done = 1;
            continue;
        }
        src[i].pid = trace_reader_header(src[i].r)->pid;
    }
    struct dump_heap heap = {0};
    uint64_t seq = 0, last_ts = 0, late = 0;
    long next;
    while ((next = dump_next_source(src, n)) >= 0) {
        struct dump_source *s = &src[next];
        struct trace_event ev;
        int rc = trace_reader_next(s->r, &ev);
        if (rc == 1) {
            json_t *j = dump_convert(&s->stacks, &ev, s->r, s->pid);
            dump_heap_push(&heap,
                           (struct dump_pending){
                               .ts = ev.ts_ns, .seq = seq++, .bytes = dump_json_bytes(j), .j = j});
            if (ev.ts_ns > s->frontier)
                s->frontier = ev.ts_ns;
        } else {
            s->done = 1;
            status = dump_worse(status, dump_reader_end(s->r, rc));
        }
        dump_release(&heap, dump_next_source(src, n), src, a->json, &last_ts, &late);
    }
    dump_release(&heap, -1, src, a->json, &last_ts, &late);
    fflush(stdout);
    if (late)
        fprintf(stderr,
                "preplay: note: %" PRIu64 " events were more than %llu ms out of time order in "
                "their trace and are printed late\n",
                late, DUMP_WINDOW_NS / 1000000ull);
    for (size_t i = 0; i < n; i++) {
        if (src[i].r)
            trace_reader_close(src[i].r);
        status = dump_worse(status, src[i].stacks.full ? INSPECT_EXIT_DAMAGED : 0);
        dump_stacks_free(&src[i].stacks);
    }
    free(src);
    free(heap.v);
    return status;
}

int cmd_dump(int argc, char **argv)
{
    struct inspect_args a;
    int rc = inspect_parse_args(argc, argv, &a, dump_usage);
    if (rc >= 0)
        return rc;
    size_t n;
    int is_dir;
    char **files = inspect_list_traces(a.target, &n, &is_dir);
    if (!files)
        return INSPECT_EXIT_DAMAGED;
    int status = is_dir ? dump_dir(&a, files, n) : dump_file(&a);
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    if (ferror(stdout) && !status)
        status = INSPECT_EXIT_DAMAGED;
    return status;
}

/* deps_end.c - connection ends and their pairing: one end per (process,
 * conn_id), identified by the CONN event's 4-tuple or AF_UNIX inode; the two
 * ends of a connection are paired through an index (reversed tuple, inode
 * <-> peer inode). An end lives while anything refers to it (its process's
 * table, blocks, calls, threads). Ends of one process never pair with each
 * other, and an end is never paired twice. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include "deps_call.h"
#include "deps_end.h"

void deps_end_addr_text(const struct deps_end *e, char *buf, size_t cap)
{
    if (e->family == AF_UNIX) {
        snprintf(buf, cap, "unix:inode=%" PRIu64, e->unix_peer_inode);
        return;
    }
    char a[INET6_ADDRSTRLEN] = "?";
    inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->remote_addr, a, sizeof a);
    snprintf(buf, cap, e->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, e->remote_port);
}

/* An end and its entries in its process's table and the pairing index. */
#define DEPS_END_BYTES (sizeof(struct deps_end) + 2 * DEPS_MAP_ENTRY_BYTES)

struct deps_end *deps_end_get(struct deps_state *s, uint32_t file, uint64_t conn_id)
{
    struct deps_proc *p = &s->procs[file];
    struct deps_end *e = deps_map_get(&p->ends, conn_id);
    if (e)
        return e;
    char key[40];
    snprintf(key, sizeof key, "conn_id %" PRIu64, conn_id);
    if (deps_state_charge(s, file, "connection", p->ends.count + 1, key, DEPS_END_BYTES) != 0)
        return NULL;
    e = calloc(1, sizeof *e);
    if (!e || deps_map_put(&p->ends, conn_id, e) != 0) {
        free(e);
        deps_state_fail(s, "out of memory");
        return NULL;
    }
    e->gid = ++s->next_gid;
    e->file = file;
    e->conn_id = conn_id;
    e->refs = 1; /* the process's table */
    e->deadline = s->now_c + s->opt->grace_ns;
    e->next = s->live.next;
    e->prev = &s->live;
    s->live.next->prev = e;
    s->live.next = e;
    return e;
}

void deps_end_unref(struct deps_state *s, struct deps_end *e)
{
    if (!e || --e->refs > 0)
        return;
    deps_state_uncharge(s, DEPS_END_BYTES);
    e->prev->next = e->next;
    e->next->prev = e->prev;
    while (e->waiters) { /* stale: their calls were given up at the end */
        struct deps_waiter *w = e->waiters;
        e->waiters = w->next;
        free(w);
    }
    free(e);
}

static uint64_t deps_end_tuple_key(uint32_t host, uint8_t proto, const uint8_t *la, uint16_t lp,
                                   const uint8_t *ra, uint16_t rp)
{
    uint64_t k = deps_map_mix(proto == TRACE_PROTO_UDP ? 2 : 1, (uint64_t)lp << 16 | rp);
    uint64_t a, b;
    memcpy(&a, la, 8);
    memcpy(&b, la + 8, 8);
    k = deps_map_mix(deps_map_mix(k, a), b);
    memcpy(&a, ra, 8);
    memcpy(&b, ra + 8, 8);
    k = deps_map_mix(deps_map_mix(k, a), b);
    /* loopback tuples are only unique within a host */
    if (la[0] == 127 || (!memcmp(la, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 15) && la[15] == 1))
        k = deps_map_mix(k, host + 1);
    return k | 1;
}

static void deps_end_pair(struct deps_state *s, struct deps_end *a, struct deps_end *b)
{
    a->peer = b->peer = DEPS_PEER_TRACED;
    a->peer_gid = b->gid;
    b->peer_gid = a->gid;
    deps_call_decide_served(s, a);
    deps_call_decide_served(s, b);
}

/* Points index entry *key at e under new_key (0: none), dropping the old
 * entry if it was e's. 0, or -1 when out of memory (the state has failed). */
static int deps_end_index_set(struct deps_state *s, uint64_t *key, uint64_t new_key,
                              struct deps_end *e)
{
    if (*key && *key != new_key && deps_map_get(&s->index, *key) == e)
        deps_map_del(&s->index, *key);
    *key = new_key;
    if (new_key && deps_map_put(&s->index, new_key, e) != 0) {
        deps_state_fail(s, "out of memory");
        return -1;
    }
    return 0;
}

/* The index key under which an AF_UNIX end that named `inode` as its peer
 * is found by the end whose inode it is. */
static uint64_t deps_end_unix_named_key(uint32_t host, uint64_t inode)
{
    return deps_map_mix(deps_map_mix(4, host), inode) | 1;
}

/* Index the end under its own identity and look for the reverse. An
 * AF_UNIX end may not know its peer's inode (a CONNECT: the accepted
 * socket gets its inode only at accept), while the other end names it:
 * the end that names its peer is also indexed under that name, for the
 * nameless end to find when it comes second. */
void deps_end_identify(struct deps_state *s, struct deps_end *e)
{
    uint32_t host = s->in.files[e->file].host;
    uint64_t own, rev;
    if (e->family == AF_UNIX) {
        if (!e->unix_inode)
            return;
        own = deps_map_mix(deps_map_mix(3, host), e->unix_inode) | 1;
        rev = e->unix_peer_inode ? deps_map_mix(deps_map_mix(3, host), e->unix_peer_inode) | 1 : 0;
        if (deps_end_index_set(
                s, &e->named_peer_key,
                e->unix_peer_inode ? deps_end_unix_named_key(host, e->unix_peer_inode) : 0, e) != 0)
            return;
        if (!rev) {
            struct deps_end *o =
                deps_map_get(&s->index, deps_end_unix_named_key(host, e->unix_inode));
            if (o && o != e && o->file != e->file && e->peer != DEPS_PEER_TRACED)
                rev = o->index_key;
        }
    } else {
        if (!e->remote_port)
            return;
        own = deps_end_tuple_key(host, e->proto, e->local_addr, e->local_port, e->remote_addr,
                                 e->remote_port);
        rev = deps_end_tuple_key(host, e->proto, e->remote_addr, e->remote_port, e->local_addr,
                                 e->local_port);
    }
    if (deps_end_index_set(s, &e->index_key, own, e) != 0)
        return;
    struct deps_end *o = rev ? deps_map_get(&s->index, rev) : NULL;
    if (o && o != e && o->file != e->file && e->peer != DEPS_PEER_TRACED)
        deps_end_pair(s, e, o);
}

void deps_end_close(struct deps_state *s, uint32_t file, struct deps_end *e)
{
    deps_end_index_set(s, &e->index_key, 0, e);
    deps_end_index_set(s, &e->named_peer_key, 0, e);
    e->closed = 1;
    deps_map_del(&s->procs[file].ends, e->conn_id);
    deps_end_unref(s, e);
}

struct deps_end **deps_end_live_snapshot(struct deps_state *s, size_t *n)
{
    size_t cnt = 0;
    for (struct deps_end *e = s->live.next; e != &s->live; e = e->next)
        cnt++;
    struct deps_end **v = malloc((cnt ? cnt : 1) * sizeof *v);
    if (!v) {
        deps_state_fail(s, "out of memory");
        *n = 0;
        return NULL;
    }
    cnt = 0;
    for (struct deps_end *e = s->live.next; e != &s->live; e = e->next) {
        e->refs++;
        v[cnt++] = e;
    }
    *n = cnt;
    return v;
}

void deps_end_live_release(struct deps_state *s, struct deps_end **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        deps_end_unref(s, v[i]);
    free(v);
}

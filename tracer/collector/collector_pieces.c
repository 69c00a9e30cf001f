/* collector_pieces.c - joins the pieces of a long string from ring 0
 * (collector_pieces.h). The pieces of one string follow each other in
 * ring 0 (the process writes them under its process lock), so one string
 * is joined at a time per process; a piece of another id, or a whole
 * string, ends the one begun (its last piece was dropped) and it is never
 * written half. Never prints, never exits. */
#include "collector_pieces.h"

#include <stdlib.h>
#include <string.h>

#include "shm_layout.h"

/* Drops the string being joined. */
static void collector_pieces_drop(struct collector_pieces *ps)
{
    if (ps->active)
        ps->dropped++;
    ps->active = 0;
    ps->failed = 0;
    ps->len = 0;
}

/* Appends a piece's bytes; marks the string failed when memory runs out
 * or it grows past the longest string a process writes. */
static void collector_pieces_append(struct collector_pieces *ps, const struct trace_event *ev)
{
    size_t n = ev->u.string.len;
    if (ps->failed || !n || !ev->data)
        return;
    if (ps->len + n > TRACER_DB_STATEMENT_MAX) {
        ps->failed = 1;
        return;
    }
    if (ps->len + n > ps->cap) {
        size_t ncap = ps->cap ? ps->cap : TRACER_STRING_PIECE_BYTES * 2;
        while (ncap < ps->len + n)
            ncap *= 2;
        unsigned char *nb = realloc(ps->buf, ncap);
        if (!nb) {
            ps->failed = 1;
            return;
        }
        ps->buf = nb;
        ps->cap = ncap;
    }
    memcpy(ps->buf + ps->len, ev->data, n);
    ps->len += n;
}

struct trace_event *collector_pieces_take(struct collector_pieces *ps, struct trace_event *ev)
{
    int more = ev->op == TRACER_STRING_OP_MORE;
    int joining = ps->active && ps->id == ev->u.string.id;
    ev->op = 0; /* the trace's STRING records have op 0 */
    if (!joining) {
        collector_pieces_drop(ps); /* a string begun, never ended */
        if (!more)
            return ev;
        ps->active = 1;
        ps->id = ev->u.string.id;
    }
    collector_pieces_append(ps, ev);
    if (more)
        return NULL;
    int failed = ps->failed;
    ps->active = 0;
    ps->failed = 0;
    if (failed) {
        ps->dropped++;
        ps->len = 0;
        return NULL;
    }
    ev->data = ps->buf;
    ev->u.string.len = (uint32_t)ps->len;
    ps->len = 0;
    return ev;
}

void collector_pieces_free(struct collector_pieces *ps)
{
    collector_pieces_drop(ps);
    free(ps->buf);
    ps->buf = NULL;
    ps->cap = 0;
}

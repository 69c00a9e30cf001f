/* collector_pieces.h - joining a long string the traced process wrote to
 * ring 0 in pieces (shm_layout.h: TRACER_STRING_OP_MORE) back into one
 * STRING event, per process (collector_pieces.c).
 *
 * A string whose last piece never comes is never written: the events that
 * name it find no string, and the DB event that interned it says it was
 * cut (it got no id). Nothing here prints or exits. */
#ifndef PREPLAY_COLLECTOR_PIECES_H
#define PREPLAY_COLLECTOR_PIECES_H

#include <stddef.h>
#include <stdint.h>

#include "trace_event.h"

struct collector_pieces {
    uint32_t id;        /* the string being joined */
    int active, failed; /* failed: out of memory, its pieces are dropped */
    unsigned char *buf;
    size_t len, cap;
    uint64_t dropped; /* strings whose pieces were dropped */
};

/* Takes a STRING event from ring 0. Returns the event to write: ev itself
 * (a string in one record), or ev made the joined string (its bytes valid
 * until the next call); NULL while pieces are gathered or when a string is
 * dropped. */
struct trace_event *collector_pieces_take(struct collector_pieces *ps, struct trace_event *ev);

/* Frees what is held (a string begun and never ended counts as dropped). */
void collector_pieces_free(struct collector_pieces *ps);

#endif

/* tracer_process.h - what the threads of a traced process share
 * (tracer_process.c): ring 0, the process's own ring, where definition
 * records (CONN, STRING, STACK) go; the lock over it and over the tables
 * the threads share (string table, datagram peers); connection ids.
 *
 * The lock is a spin-then-yield word in the shared control page: never
 * held across a call into the app or another library, and never taken
 * twice by one thread (a signal handler nested in our own code does
 * without, it does not deadlock). */
#ifndef PREPLAY_TRACER_PROCESS_H
#define PREPLAY_TRACER_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "trace_event.h"

/* Writes a definition event (CONN...) into the process ring 0. Returns 0
 * on success. */
int tracer_emit_definition(const struct trace_event *ev);
/* Same with trailing bytes (STRING/STACK payload). */
int tracer_emit_definition_data(const struct trace_event *ev, const void *data, size_t len);

/* Next connection id for this process. */
uint64_t tracer_next_conn_id(void);
/* The process's lock over ring 0 and the tables its threads share (string
 * table, datagram peers): spins, then yields. 0 when taken, -1 when this
 * thread holds it already (a signal handler nested in our own code: never
 * deadlock, the caller does without) or the process has no region. */
int tracer_process_lock(void);
void tracer_process_unlock(void);
/* In a fork child: the parent's threads (holders of the lock among them)
 * are gone. */
void tracer_process_after_fork(void);

#endif

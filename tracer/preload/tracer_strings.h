/* tracer_strings.h - the process string table (tracer_strings.c): each
 * distinct string (a path, a request line, a query) is written once to
 * ring 0 as a STRING record, and events carry its id.
 *
 * Interning never fails its caller (0: no id) and never allocates: the
 * table is a fixed mapping made at registration; lookups take no lock. */
#ifndef PREPLAY_TRACER_STRINGS_H
#define PREPLAY_TRACER_STRINGS_H

#include <stddef.h>
#include <stdint.h>

/* Interns a string into the process string table (a STRING event in ring 0
 * the first time) and returns its id, or 0 when it cannot (never fails the
 * caller). */
uint32_t tracer_intern(const char *s, size_t len);
/* The tracer's in-memory hash (string table, datagram peers). Never 0. */
uint64_t tracer_hash(const char *s, size_t len);

/* Maps the table, at registration (without it strings are still written,
 * but not deduplicated). */
void tracer_strings_init(void);
/* In a fork child: the child's trace has none of the parent's strings; a
 * fresh table. */
void tracer_strings_after_fork(void);

#endif

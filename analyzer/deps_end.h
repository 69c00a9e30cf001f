/* deps_end.h - connection ends and their pairing (deps_end.c). */
#ifndef PREPLAY_DEPS_END_H
#define PREPLAY_DEPS_END_H

#include <stddef.h>
#include <stdint.h>

#include "deps_state.h"

/* The end of connection conn_id in file's process, created (with the
 * process's reference, on the live list, its peer deadline a grace time
 * from now) when new; NULL when out of memory (the state has failed). */
struct deps_end *deps_end_get(struct deps_state *s, uint32_t file, uint64_t conn_id);
/* Drops a reference; the last one frees the end (NULL is ignored). */
void deps_end_unref(struct deps_state *s, struct deps_end *e);
/* Indexes the end under its identity (4-tuple or AF_UNIX inodes, set from
 * its CONN event) and pairs it with the other end when that one is known:
 * both become DEPS_PEER_TRACED and their finished blocks are decided. */
void deps_end_identify(struct deps_state *s, struct deps_end *e);
/* The connection is closed: it leaves the pairing index and its process's
 * table (whose reference is dropped). */
void deps_end_close(struct deps_state *s, uint32_t file, struct deps_end *e);
/* The peer's address as text ("10.0.0.2:80", "[::1]:80", "unix:inode=N"). */
void deps_end_addr_text(const struct deps_end *e, char *buf, size_t cap);
/* The live ends, each with a reference held, so callbacks may close them;
 * NULL (*n = 0) when out of memory. Give them back with deps_end_live_release. */
struct deps_end **deps_end_live_snapshot(struct deps_state *s, size_t *n);
void deps_end_live_release(struct deps_state *s, struct deps_end **v, size_t n);

#endif

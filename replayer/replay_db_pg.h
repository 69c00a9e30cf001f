/* replay_db_pg.h - PostgreSQL DB ops for the replayer through libpq
 * (replay_db_pg.c), behind replay_db.c's pool when --db is
 * postgresql://. Never prints, never retries. */
#ifndef PREPLAY_REPLAY_DB_PG_H
#define PREPLAY_REPLAY_DB_PG_H

#include <stddef.h>

#include "plan.h"

struct replay_db_pg_pool;

/* Is url a PostgreSQL one (postgresql:// or postgres://)? */
int replay_db_pg_url(const char *url);
struct replay_db_pg_pool *replay_db_pg_pool_new(const char *url, const char *password, char *err,
                                                size_t errlen);
void replay_db_pg_pool_free(struct replay_db_pg_pool *pool);
void *replay_db_pg_acquire(struct replay_db_pg_pool *pool, char *err, size_t errlen);
void replay_db_pg_release(struct replay_db_pg_pool *pool, void *conn);
/* 0, or the error: the SQLSTATE packed (trace_db_sqlstate), -1 for one
 * without; its message in err. */
int replay_db_pg_run(void *conn, const struct plan_op *op, const struct plan *p, char *err,
                     size_t errlen);

/* A rendered parameter list (`7, 'it''s', NULL, X'00FF'`) as libpq text
 * parameters: NULL for NULL, text unquoted, X'..' as bytea's \x input.
 * *out: one allocation (free it). The count, -1 when out of memory. */
int replay_db_pg_params(const char *params, char ***out);

#endif

/* run_db_pg.h - `preplay run`'s DB snapshot and per-interval restore for a
 * postgresql:// --db (run_db_pg.c): pg_dump -Fc once, pg_restore --clean
 * --single-transaction before each interval. */
#ifndef PREPLAY_RUN_DB_PG_H
#define PREPLAY_RUN_DB_PG_H

#include <stddef.h>

/* Writes the password (may be empty: nothing written, *passfile "") into
 * DIR/pgpass, 0600, in libpq's password-file syntax. 0, or -1 with the
 * reason in err. */
int run_db_pg_passfile(const char *dir, const char *password, char *passfile, size_t n, char *err,
                       size_t errlen);
/* pg_dump -Fc of url (no password in it) into dump_path; the password
 * from passfile ("" none) through PGPASSFILE. The tool's exit status (0
 * ok), -1 when it could not be run. */
int run_db_pg_dump(const char *url, const char *passfile, const char *dump_path);
/* pg_restore --clean --if-exists --single-transaction of dump_path into
 * url: the tables the replay wrote are as they were at the snapshot, and
 * the replayers' pooled connections stay open. Exit status as above. */
int run_db_pg_restore(const char *url, const char *passfile, const char *dump_path);

#endif

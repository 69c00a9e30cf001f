/* app_db.h - the sample tiers' MariaDB access through Connector/C: where the
 * database is (the --db-* options) and one lazily opened connection per worker
 * that reconnects once when the server went away. Never shares a connection
 * between threads. */
#ifndef APP_DB_H
#define APP_DB_H

#include <stddef.h>

struct app_db_config {
    const char *socket; /* unix socket path, preferred when set */
    const char *host;
    unsigned port;
    const char *user;
    const char *password;
    const char *name;
};

/* Applies one --db-NAME option (NAME = socket, host, port, user, password,
 * name). 1 if consumed, 0 if not a db option, -1 if the value is bad. */
int app_db_config_option(struct app_db_config *cfg, const char *option, const char *value);

/* Usage lines for the --db-* options. */
extern const char app_db_usage[];

struct app_db_conn; /* one per worker thread */

struct app_db_conn *app_db_conn_new(const struct app_db_config *cfg);
void app_db_conn_free(struct app_db_conn *conn);

/* Runs sql; appends the result rows to out as tab-separated lines (truncated to
 * out_cap, always NUL-terminated) and returns the number of rows, or -1 with a
 * one-line reason in err. */
long app_db_query(struct app_db_conn *conn, const char *sql, char *out, size_t out_cap,
                  size_t *out_len, char *err, size_t err_cap);

#endif

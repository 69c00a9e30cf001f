/* app_db.c - per-worker MariaDB connections for the sample tiers (app_db.h).
 * Uses only the Connector/C API (mysql_real_query / mysql_store_result) so a
 * tracer interposing libmariadb sees every query. Never shares a MYSQL handle. */
#include "app_db.h"
#include "app_net.h"

#include <mysql.h>
#include <errmsg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char app_db_usage[] =
    "  --db-socket PATH      MariaDB unix socket (preferred over host/port)\n"
    "  --db-host HOST        MariaDB host (default 127.0.0.1)\n"
    "  --db-port PORT        MariaDB port (default 3306)\n"
    "  --db-user USER        MariaDB user (default sample)\n"
    "  --db-password PASS    MariaDB password (default none)\n"
    "  --db-name NAME        database (default sample)\n";

struct app_db_conn {
    const struct app_db_config *cfg;
    MYSQL *mysql;
};

int app_db_config_option(struct app_db_config *cfg, const char *option, const char *value)
{
    if (strncmp(option, "db-", 3) != 0)
        return 0;
    const char *name = option + 3;
    if (strcmp(name, "socket") == 0)
        cfg->socket = value;
    else if (strcmp(name, "host") == 0)
        cfg->host = value;
    else if (strcmp(name, "user") == 0)
        cfg->user = value;
    else if (strcmp(name, "password") == 0)
        cfg->password = value;
    else if (strcmp(name, "name") == 0)
        cfg->name = value;
    else if (strcmp(name, "port") == 0) {
        unsigned long long port;
        if (app_parse_uint(value, 1, 65535, &port) < 0)
            return -1;
        cfg->port = (unsigned)port;
    } else
        return 0;
    return 1;
}

struct app_db_conn *app_db_conn_new(const struct app_db_config *cfg)
{
    struct app_db_conn *conn = calloc(1, sizeof *conn);
    if (conn)
        conn->cfg = cfg;
    return conn;
}

void app_db_conn_free(struct app_db_conn *conn)
{
    if (!conn)
        return;
    if (conn->mysql)
        mysql_close(conn->mysql);
    free(conn);
}

static int app_db_connect(struct app_db_conn *conn, char *err, size_t err_cap)
{
    const struct app_db_config *cfg = conn->cfg;
    MYSQL *m = mysql_init(NULL);
    if (!m) {
        snprintf(err, err_cap, "db: mysql_init: out of memory");
        return -1;
    }
    unsigned timeout = 10;
    mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
    mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
    const char *host = cfg->socket ? "localhost" : (cfg->host ? cfg->host : "127.0.0.1");
    if (!mysql_real_connect(m, host, cfg->user ? cfg->user : "sample", cfg->password,
                            cfg->name ? cfg->name : "sample", cfg->socket ? 0 : cfg->port,
                            cfg->socket, 0)) {
        snprintf(err, err_cap, "db: connect to %s: %s", cfg->socket ? cfg->socket : host,
                 mysql_error(m));
        mysql_close(m);
        return -1;
    }
    conn->mysql = m;
    return 0;
}

long app_db_query(struct app_db_conn *conn, const char *sql, char *out, size_t out_cap,
                  size_t *out_len, char *err, size_t err_cap)
{
    size_t len = out_len ? *out_len : 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!conn->mysql && app_db_connect(conn, err, err_cap) < 0)
            return -1;
        if (mysql_real_query(conn->mysql, sql, strlen(sql)) != 0) {
            unsigned code = mysql_errno(conn->mysql);
            snprintf(err, err_cap, "db: query failed (%u): %s", code, mysql_error(conn->mysql));
            if (attempt == 0 && (code == CR_SERVER_GONE_ERROR || code == CR_SERVER_LOST)) {
                mysql_close(conn->mysql); /* the server went away: reconnect once */
                conn->mysql = NULL;
                continue;
            }
            return -1;
        }
        MYSQL_RES *res = mysql_store_result(conn->mysql);
        if (!res) {
            if (mysql_field_count(conn->mysql) == 0)
                return 0; /* statement without a result set */
            snprintf(err, err_cap, "db: reading result: %s", mysql_error(conn->mysql));
            return -1;
        }
        unsigned fields = mysql_num_fields(res);
        long rows = 0;
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(res))) {
            rows++;
            for (unsigned i = 0; i < fields && out && len + 1 < out_cap; i++) {
                int n = snprintf(out + len, out_cap - len, "%s%s", i ? "\t" : "",
                                 row[i] ? row[i] : "NULL");
                len = n < 0 ? len : (len + (size_t)n < out_cap ? len + (size_t)n : out_cap - 1);
            }
            if (out && len + 1 < out_cap) {
                out[len++] = '\n';
                out[len] = '\0';
            }
        }
        mysql_free_result(res);
        if (out_len)
            *out_len = len;
        return rows;
    }
    return -1;
}

/* replay_cli.h - helpers the replay, drive and run commands share: plan
 * loading with one-line errors, component lookup, CPU ratio measurement and
 * burn calibration. */
#ifndef PREPLAY_REPLAY_CLI_H
#define PREPLAY_REPLAY_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct plan *replay_cli_load_plan(const char *path, const char *who);
int replay_cli_component(const struct plan *p, const char *name); /* -1 = none */
/* Geometric-mean CPU kernel ratio against the plan's scores (1 with a note
 * when the plan has none). */
double replay_cli_cpu_ratio(const struct plan *p, const char *who, double *lo, double *hi);
/* Calibrates the burn and switches replay_cpu_burn to it. */
int replay_cli_calibrate(const char *who);

/* Secrets kept off the command line (`ps` shows every process's argv to
 * every user). */
/* The first line of `path` ("-": stdin) without its line end, for the
 * option `option` ("--token-file"). 0, or -1 after printing
 * "WHO: OPTION PATH: reason". */
int replay_cli_read_secret(const char *who, const char *option, const char *path, char *out,
                           size_t outlen);
/* --token T or --token-file F (exactly one of them non-NULL) into *token;
 * 0, or -1 after printing the reason. */
int replay_cli_token(const char *who, const char *text, const char *file, uint64_t *token);
/* The DB password: from --db-password-file `file`, else the environment's
 * PREPLAY_DB_PASSWORD, else none (NULL: the URL's own, if any; then a
 * warning when it is on this process's command line). *password points
 * into buf or is NULL. 0, or -1 after printing the reason. */
int replay_cli_db_password(const char *who, const char *url, const char *file, char *buf,
                           size_t buflen, const char **password);
/* --db URL as the command line gave it (arg: the argv string itself): a
 * copy the command keeps, and the password's characters in arg overwritten
 * with 'x', so that `ps` and /proc/PID/cmdline of this process and of every
 * child it forks show no password after the first instant (the mariadb
 * client does the same). NULL after printing the reason (too long). */
const char *replay_cli_db_url_take(const char *who, char *arg);
/* url without its ":password" part (mysql://user@host/db); the password,
 * or "" when it has none, into pw. */
void replay_cli_db_url_split(const char *url, char *clean, size_t cleanlen, char *pw, size_t pwlen);

/* "30s", "500ms", "2m", "1h", bare seconds. 0 or -1. */
int replay_parse_duration(const char *text, double *seconds);
#include "replay_drive.h"
int replay_parse_mode(const char *text, enum replay_drive_mode *mode);

#endif

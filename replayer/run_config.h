/* run_config.h - the options of `preplay run` (run_config.c): what the
 * command line asks for, checked, with the defaults filled in. Parsing
 * only: never starts, opens or writes anything. */
#ifndef PREPLAY_RUN_CONFIG_H
#define PREPLAY_RUN_CONFIG_H

#include "replay_drive.h"

/* --warmup's bound: a day */
#define RUN_WARMUP_MAX_S 86400.0

struct run_config {
    const char *plan_path, *out;
    const char *db_url;           /* NULL: no DB snapshot */
    const char *db_password_file; /* NULL: $PREPLAY_DB_PASSWORD, else the URL's */
    const char *instance;         /* "" when not given */
    const char *dir;              /* dummy files; NULL: in the run's temp dir */
    const char *pool;             /* the replayers' --pool, as text */
    const char *hosts_path, *ssh_opts;
    double p0, speed;
    double interval; /* seconds; 0 when not given: one pass of the recording */
    double price;    /* NAN when not given */
    double window;   /* counters window, seconds (10); 0: no counters */
    double ratio;    /* 0 when not given (measured) */
    double warmup;   /* seconds of load before the first interval, not counted (0) */
    /* failed requests the run tolerates before exit status 3: a count, or
     * with max_failed_pct a percentage of the requests sent (0: none) */
    double max_failed;
    int max_failed_pct;
    long max_intervals, ssh_timeout;
    int no_deps, ratio_given, log_scale;
    enum replay_drive_mode mode;
};

/* Parses `preplay run` arguments into c. 0: go on with the run; -1: stop
 * now and exit with *exit_code (2 for a bad option, 0 after --help), the
 * message printed. */
int run_config_parse(int argc, char **argv, struct run_config *c, int *exit_code);

#endif

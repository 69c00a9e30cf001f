/* run_session.h - one `preplay run` session (run_session.c): the plan,
 * the replayer children (local processes and remote ones over ssh), the
 * temp dir, dummy files, the DB snapshot, the signal handlers, the
 * PT4Cloud machine and the results gathered so far. The session owns all
 * of them and run_session_close alone tears them down, whatever happened
 * before. Must never leave a replayer running. */
#ifndef PREPLAY_RUN_SESSION_H
#define PREPLAY_RUN_SESSION_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "plan.h"
#include "replay_results.h"
#include "run_config.h"
#include "run_failures.h"
#include "run_remote.h"
#include "stats.h"

struct dummy_files;
struct run_counters;
struct stats_machine;

struct run_child {
    const char *name;
    pid_t pid;
    int status, exited;
    char addr[128]; /* where the controller reaches it */
    char log[4200];
    const struct run_host *host; /* NULL: local */
    struct run_remote *remote;
    char host_text[340]; /* "user@host:port" for messages */
};

/* DB snapshot by dump and reload with the mariadb clients; the password
 * reaches them in an option file (mode 0600, in the run's private temp
 * dir), never on a command line. */
struct run_db {
    char host[256], user[128], password[256], db[128], socket[256], port[16];
    char dump_path[4200], cnf_path[4200];
    char url_clean[1024];  /* --db without its password: local replayers' argv */
    char url_remote[1280]; /* with it: sent over the agents' ssh channel */
    int pg;                /* postgresql://: pg_dump/pg_restore (run_db_pg.c) */
};

struct run_session {
    const struct run_config *cfg;
    struct plan *p;
    struct run_child *children;
    uint32_t nchildren, nremote;
    int frontend;      /* component the driver sends to */
    const char *dead;  /* name of a replayer that died */
    int tty;           /* stderr is a terminal: progress on one line */
    int said_priority; /* REPLAY_DRIVE_NOT_REALTIME said once */
    uint64_t token;
    char tokbuf[17], ratiobuf[32];
    double ratio;
    double ratio_lo, ratio_hi; /* its 95% interval when measured here; 0: none */
    char work[32], peers[4200], dirbuf[4200];
    const char *dir;
    int have_work, have_handlers, have_db;
    struct sigaction old_int, old_term;
    struct run_hosts hosts;
    struct dummy_files *files;
    struct run_db db;
    double dump_s;
    struct stats_machine *m;
    struct stats_step last; /* the machine's last decision (last.interval 0: none) */
    /* the plan's repeating schedule: one pass (recorded ns), its requests,
     * and where the next interval starts in it */
    uint64_t schedule_ns, schedule_at_ns;
    /* --warmup as it ran: seconds driven (0: none), requests, failed */
    double warmup_s;
    uint64_t warmup_requests, warmup_failed;
    /* results so far (formats/RESULTS.md) */
    json_t *intervals, *samples, *resources, *db_errors, *restores;
    uint64_t db_cut; /* DB statements recorded cut, replayed as waits (results) */
    struct replay_label_set all;
    struct run_failures failures; /* failed requests per label and why */
    /* what the replayers' STATS said went wrong, summed over intervals:
     * calls to other components, file operations, DB connections */
    uint64_t call_errors, file_errors, db_unavailable;
    struct run_counters *counters; /* NULL: --window 0 (run_cli.c owns it) */
};

/* Loads the plan and prepares an empty session. -1 (message printed) when
 * the plan cannot be loaded: nothing to close then. */
int run_session_open(struct run_session *s, const struct run_config *cfg);
/* Everything before the first interval: signal handlers, temp dir, dummy
 * files, CPU ratio, DB snapshot, the replayers with their peers files, the
 * PT4Cloud machine. 0, or -1 with the reason printed. */
int run_session_start(struct run_session *s);
/* The signal that interrupted the run (SIGINT/SIGTERM), or 0. */
int run_session_interrupted(void);
/* Non-zero once a replayer has exited (remembered in s->dead) or a signal
 * came; arg is the session (the driver's should_abort). */
int run_session_check_children(void *arg);

#define RUN_REMOTE_FAILED (-2)
/* The starting state again, on every host at once: dummy files and the
 * DB snapshot; the seconds each took. 0; -1 with the reason printed;
 * RUN_REMOTE_FAILED with err (a host stopped answering). */
int run_session_restore(struct run_session *s, long iv, double *files_s, double *db_s, char *err,
                        size_t errlen);
/* A control request (REPLAY_BLOCK_RESET / _STATS) to child i; the answer
 * (malloc'ed) or NULL with err. */
char *run_session_control(const struct run_session *s, uint32_t i, uint32_t block, char *err,
                          size_t errlen);
/* Prints how the dead replayer ended (prefix "\n" after a progress line)
 * during interval `interval`, and points s->dead at it. */
void run_session_print_death(struct run_session *s, const char *prefix, size_t interval);
/* Stops every replayer (local: SIGTERM, then SIGKILL after 1 s; remote:
 * over its ssh session), restores the signal handlers, removes the temp
 * dir when rc is 0 (else says where the logs are), frees everything. */
void run_session_close(struct run_session *s, int rc);

/* Runs argv with stdin/stdout redirected (NULL = inherit; out is created
 * through out_file, never through a planted link) and, when both are
 * given, env_name=env_value set in the child; its exit status (128 + signal
 * when killed), or -1. */
int run_exec(char *const argv[], const char *in, const char *out, const char *env_name,
             const char *env_value);

#endif

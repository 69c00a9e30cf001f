/* run_config.c - the options of `preplay run`: usage text, getopt, the
 * checks and messages of each value (exit status 2), the defaults
 * (--p0 0.9, --interval: the whole recording, --max-intervals 20, --pool
 * 64, ssh options from $PREPLAY_SSH_OPTS). Never starts or opens anything. */
#include "machine_counters.h"
#include "run_config.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_cli.h"
#include "results_reader.h"
#include "run_failures.h"

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay run PLAN -o RESULTS [--db URL [--db-password-file F]]\n"
            "                   [--p0 P] [--interval T] [--warmup T]\n"
            "                   [--max-intervals N] [--mode independent|session] [--speed X]\n"
            "                   [--instance NAME] [--price USD_PER_HOUR] [--dir D]\n"
            "                   [--pool N] [--cpu-ratio R] [--no-deps]\n"
            "                   [--hosts FILE [--ssh-opts OPTS] [--ssh-timeout S]]\n"
            "                   [--window T] [--max-failed N|P%%]\n\n"
            "Start a replayer per component (on loopback, or over ssh on the hosts FILE\n"
            "maps components to), then replay the plan's schedule interval after interval\n"
            "until PT4Cloud says the response times are stable.\n"
            "  --db URL          mysql://user@host:port/db (or ?socket=PATH), or\n"
            "                    postgresql://user@host:port/db; it is dumped before the\n"
            "                    first interval and reloaded before each\n"
            "  --db-password-file F  the DB password (first line of F); else the\n"
            "                    environment's PREPLAY_DB_PASSWORD, else the URL's\n"
            "                    (user:password@, visible in `ps`)\n"
            "  --p0 P            PT4Cloud objective probability (0.9)\n"
            "  --interval T      length of one interval (default: the whole recording,\n"
            "                    once, at --speed); shorter ones continue the schedule\n"
            "                    where the last stopped\n"
            "  --warmup T        drive the schedule for T before the first interval and\n"
            "                    throw its responses away (default 0: the first interval\n"
            "                    starts cold: connections, caches, pools)\n"
            "  --max-intervals N stop after N intervals even if not stable (20)\n"
            "  --dir D           dummy files directory (default: a temporary one)\n"
            "  --no-deps         CloudProphet's strawman: each recorded worker replays its\n"
            "                    blocks in recorded order, ignoring dependencies\n"
            "  --instance NAME, --price USD  recorded in the results\n"
            "  --hosts FILE      'COMPONENT [user@]host[:sshport] [listen-address]' lines:\n"
            "                    those replayers run there (preplay is copied over ssh)\n"
            "  --ssh-opts OPTS   extra ssh options, e.g. '-i KEY -o StrictHostKeyChecking=no'\n"
            "                    (default: $PREPLAY_SSH_OPTS); ssh runs with BatchMode=yes\n"
            "  --ssh-timeout S   ssh ConnectTimeout in seconds (10)\n"
            "  --window T        counters per window of T (default 10s; 0: none), for\n"
            "                    `preplay regress`\n"
            "  --max-failed N|P%% failed requests tolerated, a count or a percentage of\n"
            "                    those sent (0): beyond it the exit status is 3 (the\n"
            "                    results are written either way)\n"
            "  --log             stop rule on ln(response time): robust to rare huge\n"
            "                    outliers (docs/stats-accuracy.md); default: the paper's\n"
            "                    linear scale\n");
}

static const struct option run_options[] = {{"db", required_argument, 0, 'd'},
                                            {"db-password-file", required_argument, 0, 'W'},
                                            {"p0", required_argument, 0, 'p'},
                                            {"interval", required_argument, 0, 'i'},
                                            {"max-intervals", required_argument, 0, 'n'},
                                            {"warmup", required_argument, 0, 'U'},
                                            {"mode", required_argument, 0, 'm'},
                                            {"speed", required_argument, 0, 's'},
                                            {"instance", required_argument, 0, 'I'},
                                            {"price", required_argument, 0, 'P'},
                                            {"dir", required_argument, 0, 'D'},
                                            {"pool", required_argument, 0, 'L'},
                                            {"cpu-ratio", required_argument, 0, 'r'},
                                            {"no-deps", no_argument, 0, 'N'},
                                            {"hosts", required_argument, 0, 'H'},
                                            {"ssh-opts", required_argument, 0, 'S'},
                                            {"ssh-timeout", required_argument, 0, 'T'},
                                            {"log", no_argument, 0, 'G'},
                                            {"window", required_argument, 0, 'w'},
                                            {"max-failed", required_argument, 0, 'F'},
                                            {"output", required_argument, 0, 'o'},
                                            {"help", no_argument, 0, 'h'},
                                            {0, 0, 0, 0}};

/* The options that take a number: 0, or 2 with the message printed. */
static int run_config_number(struct run_config *c, int opt, const char *arg)
{
    char *end = NULL;
    switch (opt) {
    case 'p':
        c->p0 = strtod(arg, &end);
        if (*end || !(c->p0 > 0 && c->p0 < 1)) {
            fprintf(stderr, "run: --p0 '%s': expected a probability in (0, 1)\n", arg);
            return 2;
        }
        break;
    case 'i':
        if (replay_parse_duration(arg, &c->interval) || !(c->interval > 0)) {
            fprintf(stderr, "run: --interval '%s': expected e.g. 30s, 2m\n", arg);
            return 2;
        }
        break;
    case 'U':
        if (replay_parse_duration(arg, &c->warmup) || !(c->warmup <= RUN_WARMUP_MAX_S)) {
            fprintf(stderr, "run: --warmup '%s': expected 0 .. 24h, e.g. 5s, 1m\n", arg);
            return 2;
        }
        break;
    case 'n':
        c->max_intervals = strtol(arg, &end, 10);
        if (*end || c->max_intervals < 1 || c->max_intervals > 100000) {
            fprintf(stderr, "run: --max-intervals '%s': expected 1..100000\n", arg);
            return 2;
        }
        break;
    case 's':
        c->speed = strtod(arg, &end);
        if (*end || !(c->speed > 0) || !isfinite(c->speed)) {
            fprintf(stderr, "run: --speed '%s': expected a positive number\n", arg);
            return 2;
        }
        break;
    case 'P':
        c->price = strtod(arg, &end);
        if (*end || !(c->price >= 0 && c->price <= RESULTS_MAX_PRICE)) {
            fprintf(stderr, "run: --price '%s': expected USD per hour in [0, %g]\n", arg,
                    RESULTS_MAX_PRICE);
            return 2;
        }
        break;
    case 'r':
        c->ratio = strtod(arg, &end);
        if (*end || !(c->ratio > 0) || !isfinite(c->ratio)) {
            fprintf(stderr, "run: --cpu-ratio '%s': expected a positive number\n", arg);
            return 2;
        }
        c->ratio_given = 1;
        break;
    case 'w':
        if (counters_parse_window(arg, &c->window)) {
            fprintf(stderr, "run: --window '%s': expected 0 (no counters) or 0.1s..24h, e.g. 10s\n",
                    arg);
            return 2;
        }
        break;
    case 'F':
        if (run_failures_parse_max(arg, &c->max_failed, &c->max_failed_pct)) {
            fprintf(stderr, "run: --max-failed '%s': %s\n", arg, RUN_FAILURES_MAX_EXPECTED);
            return 2;
        }
        break;
    case 'T':
        c->ssh_timeout = strtol(arg, &end, 10);
        if (*end || c->ssh_timeout < 1 || c->ssh_timeout > 600) {
            fprintf(stderr, "run: --ssh-timeout '%s': expected 1..600 seconds\n", arg);
            return 2;
        }
        break;
    }
    return 0;
}

/* One option: 0, or the exit status (-1 for --help: exit 0). */
static int run_config_option(struct run_config *c, int opt, const char *arg)
{
    switch (opt) {
    case 'd':
        c->db_url = arg;
        break;
    case 'W':
        c->db_password_file = arg;
        break;
    case 'p':
    case 'i':
    case 'U':
    case 'n':
    case 's':
    case 'P':
    case 'r':
    case 'T':
    case 'w':
    case 'F':
        return run_config_number(c, opt, arg);
    case 'm':
        if (replay_parse_mode(arg, &c->mode)) {
            fprintf(stderr, "run: --mode '%s': expected independent or session\n", arg);
            return 2;
        }
        break;
    case 'I':
        c->instance = arg;
        break;
    case 'D':
        c->dir = arg;
        break;
    case 'L':
        c->pool = arg;
        break;
    case 'H':
        c->hosts_path = arg;
        break;
    case 'S':
        c->ssh_opts = arg;
        break;
    case 'N':
        c->no_deps = 1;
        break;
    case 'G':
        c->log_scale = 1;
        break;
    case 'o':
        c->out = arg;
        break;
    case 'h':
        run_usage(stdout);
        return -1;
    default:
        run_usage(stderr);
        return 2;
    }
    return 0;
}

int run_config_parse(int argc, char **argv, struct run_config *c, int *exit_code)
{
    *c = (struct run_config){.instance = "",
                             .pool = "64",
                             .ssh_opts = getenv("PREPLAY_SSH_OPTS"),
                             .p0 = 0.9,
                             .interval = 0,
                             .speed = 1,
                             .price = NAN,
                             .max_intervals = 20,
                             .ssh_timeout = 10,
                             .window = 10,
                             .mode = REPLAY_DRIVE_INDEPENDENT};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "d:W:p:i:U:n:m:s:I:P:D:L:r:NH:S:T:Gw:F:o:h", run_options,
                              NULL)) != -1) {
        /* the URL's password leaves this process's argv at once */
        const char *arg = optarg;
        if (opt == 'd' && !(arg = replay_cli_db_url_take("run", optarg))) {
            *exit_code = 2;
            return -1;
        }
        int st = run_config_option(c, opt, arg);
        if (st) {
            *exit_code = st < 0 ? 0 : st;
            return -1;
        }
    }
    if (optind + 1 != argc || !c->out) {
        fprintf(stderr, "run: needs PLAN and -o RESULTS (see --help)\n");
        *exit_code = 2;
        return -1;
    }
    if (c->db_password_file && !c->db_url) {
        fprintf(stderr, "run: --db-password-file needs --db\n");
        *exit_code = 2;
        return -1;
    }
    c->plan_path = argv[optind];
    return 0;
}

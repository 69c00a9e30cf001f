/* replay_cli.c - `preplay replay PLAN --component C --listen ADDR --token T`:
 * loads the plan, measures the CPU ratio (unless given) and calibrates the
 * CPU burn, then serves the component's blocks until SIGINT/SIGTERM. Prints
 * "listening ADDR" as its first stdout line (what `preplay run` waits for).
 * Must never serve without a token. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replayer_cli.h"
#include "cpu_kernels.h"
#include "cpu_ratio.h"
#include "cpuburn.h"
#include "replay_cli.h"
#include "replay_exec.h"
#include "replay_proto.h"
#include "replay_server.h"
#include "out_file.h"

static struct cpuburn_calibration replay_cli_cal;

static void replay_cli_burn(uint64_t ns)
{
    cpuburn_run(&replay_cli_cal, ns);
}

int replay_cli_calibrate(const char *who)
{
    char err[256];
    if (cpuburn_calibrate(&replay_cli_cal, -1, 0, err, sizeof err)) {
        fprintf(stderr, "%s: CPU burn calibration failed: %s\n", who, err);
        return -1;
    }
    replay_cpu_burn = replay_cli_burn;
    return 0;
}

double replay_cli_cpu_ratio(const struct plan *p, const char *who, double *lo, double *hi)
{
    if (lo)
        *lo = 0; /* no interval unless measured */
    if (hi)
        *hi = 0;
    if (!p->ncpu_scores) {
        fprintf(stderr, "%s: the plan has no recorded CPU scores: CPU ratio 1 (use --cpu-ratio)\n",
                who);
        return 1.0;
    }
    struct cpu_ratio_scores here;
    char err[256];
    if (cpu_ratio_measure_here(-1, 0, &here, err, sizeof err)) {
        fprintf(stderr, "%s: CPU kernels failed (%s): CPU ratio 1 (use --cpu-ratio)\n", who, err);
        return 1.0;
    }
    struct cpu_ratio_estimate est;
    if (!cpu_ratio_estimate(p->cpu_scores, p->ncpu_scores, &here, &est) || !isfinite(est.ratio) ||
        est.ratio <= 0) {
        fprintf(stderr, "%s: no CPU kernel in common with the plan's scores: CPU ratio 1\n", who);
        return 1.0;
    }
    if (est.ratio < CPU_RATIO_MIN || est.ratio > CPU_RATIO_MAX) {
        fprintf(stderr,
                "%s: the plan's CPU scores give a CPU ratio of %g, outside [%g, %g]: damaged "
                "scores, not a machine: CPU ratio 1 (use --cpu-ratio)\n",
                who, est.ratio, CPU_RATIO_MIN, CPU_RATIO_MAX);
        return 1.0;
    }
    fprintf(stderr, "%s: CPU ratio %.3f [%.3f, %.3f] (95%%; this machine / the recording host)\n",
            who, est.ratio, est.lo, est.hi);
    if (est.basis == CPU_RATIO_BASIS_CHAIN && isfinite(est.kernels_ratio))
        fprintf(stderr,
                "%s: the same CPU as the recording host: the ratio is the replay's burn loop's; "
                "the benchmark kernels said %.3f [%.3f, %.3f]%s (docs/preplay-calibrate.md)\n",
                who, est.kernels_ratio, est.kernels_lo, est.kernels_hi,
                est.kernels_lo > est.hi || est.kernels_hi < est.lo
                    ? ", slowed by other load on the host's caches and cores during one of the "
                      "two measurements"
                    : "");
    else if (est.basis == CPU_RATIO_BASIS_CHAIN)
        fprintf(stderr,
                "%s: the same CPU as the recording host: the ratio is the replay's burn loop's "
                "(docs/preplay-calibrate.md)\n",
                who);
    if (lo)
        *lo = est.lo;
    if (hi)
        *hi = est.hi;
    return est.ratio;
}

struct plan *replay_cli_load_plan(const char *path, const char *who)
{
    char err[512];
    struct plan *p = plan_read(path, err, sizeof err);
    if (!p) {
        fprintf(stderr, "%s: %s\n", who, err);
        return NULL;
    }
    return p;
}

int replay_cli_component(const struct plan *p, const char *name)
{
    for (uint32_t i = 0; i < p->ncomponents; i++)
        if (!strcmp(plan_string(p, p->components[i].name), name))
            return (int)i;
    return -1;
}

int replay_cli_read_secret(const char *who, const char *option, const char *path, char *out,
                           size_t outlen)
{
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
    if (fd < 0) {
        fprintf(stderr, "%s: %s %s: %s\n", who, option, path, strerror(errno));
        return -1;
    }
    size_t got = 0;
    const char *why = NULL;
    while (got + 1 < outlen && !memchr(out, '\n', got)) {
        ssize_t n = read(fd, out + got, outlen - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            why = strerror(errno);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (fd)
        close(fd);
    out[got] = 0;
    char *end = strpbrk(out, "\r\n");
    if (end)
        *end = 0;
    else if (!why && got + 1 >= outlen)
        why = "first line too long";
    if (!why && !out[0])
        why = "empty";
    if (why) {
        fprintf(stderr, "%s: %s %s: %s\n", who, option, path, why);
        memset(out, 0, outlen);
        return -1;
    }
    return 0;
}

int replay_cli_token(const char *who, const char *text, const char *file, uint64_t *token)
{
    if (text && file) {
        fprintf(stderr, "%s: give --token or --token-file, not both\n", who);
        return -1;
    }
    if (!file) {
        if (text && !replay_token_parse(text, token))
            return 0;
        fprintf(stderr, "%s: --token: expected 16 hex digits (preplay run makes one per run)\n",
                who);
        return -1;
    }
    char buf[64];
    if (replay_cli_read_secret(who, "--token-file", file, buf, sizeof buf))
        return -1;
    int bad = replay_token_parse(buf, token);
    memset(buf, 0, sizeof buf);
    if (bad) {
        fprintf(stderr, "%s: --token-file %s: expected 16 hex digits\n", who, file);
        return -1;
    }
    return 0;
}

/* Where url's password is: the offset of the ':' before it and its length
 * (up to the '@'); 0 when the URL has none. */
static int replay_cli_db_url_password(const char *url, size_t *colon, size_t *len)
{
    const char *s = strstr(url, "://");
    const char *at = s ? strchr(s + 3, '@') : NULL;
    const char *c = at ? memchr(s + 3, ':', (size_t)(at - s - 3)) : NULL;
    if (!c)
        return 0;
    *colon = (size_t)(c - url);
    *len = (size_t)(at - c - 1);
    return 1;
}

void replay_cli_db_url_split(const char *url, char *clean, size_t cleanlen, char *pw, size_t pwlen)
{
    snprintf(clean, cleanlen, "%s", url);
    pw[0] = 0;
    size_t colon, len;
    if (!replay_cli_db_url_password(url, &colon, &len))
        return;
    snprintf(clean, cleanlen, "%.*s%s", (int)colon, url, url + colon + 1 + len);
    snprintf(pw, pwlen, "%.*s", (int)len, url + colon + 1);
}

const char *replay_cli_db_url_take(const char *who, char *arg)
{
    static char kept_urls[4][4096]; /* duet keeps two; a repeated option one more */
    static int nkept;
    if (nkept == 4) {
        fprintf(stderr, "%s: more than 4 DB URLs on the command line\n", who);
        return NULL;
    }
    char *kept = kept_urls[nkept];
    if (strlen(arg) >= sizeof kept_urls[0]) {
        fprintf(stderr, "%s: a DB URL longer than %zu bytes\n", who, sizeof kept_urls[0] - 1);
        return NULL;
    }
    nkept++;
    snprintf(kept, sizeof kept_urls[0], "%s", arg);
    size_t colon, len;
    if (replay_cli_db_url_password(arg, &colon, &len))
        memset(arg + colon + 1, 'x', len);
    return kept;
}

/* Whether text is in this process's argv as `ps` shows it (not so for a
 * replayer that `preplay remote-agent` runs in a child of its own). */
static int replay_cli_on_cmdline(const char *text)
{
    static char buf[65536];
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1; /* cannot tell: say so */
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    return n > 0 && memmem(buf, (size_t)n, text, strlen(text)) != NULL;
}

int replay_cli_db_password(const char *who, const char *url, const char *file, char *buf,
                           size_t buflen, const char **password)
{
    *password = NULL;
    if (file) {
        if (replay_cli_read_secret(who, "--db-password-file", file, buf, buflen))
            return -1;
        *password = buf;
        return 0;
    }
    const char *env = getenv("PREPLAY_DB_PASSWORD");
    if (env && env[0]) {
        if (strlen(env) >= buflen) {
            fprintf(stderr, "%s: PREPLAY_DB_PASSWORD: longer than %zu bytes\n", who, buflen - 1);
            return -1;
        }
        snprintf(buf, buflen, "%s", env);
        *password = buf;
        return 0;
    }
    if (url) {
        char clean[1024], pw[256];
        replay_cli_db_url_split(url, clean, sizeof clean, pw, sizeof pw);
        if (pw[0] && replay_cli_on_cmdline(pw))
            fprintf(stderr,
                    "%s: warning: the DB password in --db is visible to every user (ps); use "
                    "--db-password-file or PREPLAY_DB_PASSWORD\n",
                    who);
        else if (pw[0])
            fprintf(stderr,
                    "%s: warning: the DB password in --db was visible to every user (ps) until "
                    "%s started, and stays in your shell's history; use --db-password-file or "
                    "PREPLAY_DB_PASSWORD\n",
                    who, who);
        memset(pw, 0, sizeof pw);
    }
    return 0;
}

static void replay_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay replay PLAN --component C --listen HOST:PORT\n"
            "                      (--token T | --token-file F) [--workers N]\n"
            "                      [--db URL [--db-password-file F]] [--dir D] [--peers FILE]\n"
            "                      [--pool N] [--cpu-ratio R] [--stats FILE]\n"
            "                      [--no-deps [--hold S]]\n\n"
            "Serve component C's event blocks: a pool of workers replays each request's\n"
            "block (CPU, files, locks, DB, nested calls) when it arrives; an event-loop\n"
            "component's loops, one thread each, serve many connections at once.\n\n"
            "  --token T       16 hex digits every request must carry (per run); `ps`\n"
            "                  shows it: prefer --token-file\n"
            "  --token-file F  read the token from F's first line (- = stdin)\n"
            "  --workers N     worker threads (default: the plan's count for C); for an\n"
            "                  event-loop component, event loops (64 helper threads each)\n"
            "  --db URL        mysql://user@host:port/db or postgresql://user@host:port/db\n"
            "                  for DB ops (a password in it is visible in `ps`)\n"
            "  --db-password-file F  the DB password (first line of F); else the\n"
            "                  environment's PREPLAY_DB_PASSWORD, else the URL's\n"
            "  --dir D         dummy files made by `preplay prepare` (default .)\n"
            "  --peers FILE    'component HOST:PORT' lines for nested calls\n"
            "  --pool N        idle connections kept per callee (default 64; 0: one per call)\n"
            "  --cpu-ratio R   scale recorded CPU time by R (default: measured)\n"
            "  --stats FILE    write the replay counters (JSON) there on exit\n"
            "  --no-deps       CloudProphet's strawman: each recorded worker replays its\n"
            "                  blocks in recorded order, holding requests that come early\n"
            "  --hold S        --no-deps: skip a block that has not come after S s (5)\n"
            "Prints 'listening HOST:PORT' on stdout once ready; stops on SIGINT/SIGTERM.\n");
}

struct replay_cli_opts {
    const char *plan_path, *component, *listen_addr, *db, *dir, *peers, *stats_path;
    const char *db_password; /* NULL: the URL's */
    char db_password_buf[256];
    uint64_t token;
    int workers, pool;  /* workers 0: the plan's count for the component */
    double ratio, hold; /* ratio 0: measured */
    int no_deps;
};

/* Returns 0 to go on, 1 when --help was printed, 2 on a usage error. */
static int replay_parse_options(int argc, char **argv, struct replay_cli_opts *o)
{
    static const struct option opts[] = {{"component", required_argument, 0, 'c'},
                                         {"listen", required_argument, 0, 'l'},
                                         {"workers", required_argument, 0, 'w'},
                                         {"db", required_argument, 0, 'd'},
                                         {"dir", required_argument, 0, 'D'},
                                         {"peers", required_argument, 0, 'p'},
                                         {"token", required_argument, 0, 't'},
                                         {"token-file", required_argument, 0, 'T'},
                                         {"db-password-file", required_argument, 0, 'W'},
                                         {"pool", required_argument, 0, 'P'},
                                         {"cpu-ratio", required_argument, 0, 'r'},
                                         {"stats", required_argument, 0, 's'},
                                         {"no-deps", no_argument, 0, 'N'},
                                         {"hold", required_argument, 0, 'H'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->dir = ".";
    o->pool = 64;
    o->hold = 5;
    const char *token_text = NULL, *token_file = NULL, *password_file = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:l:w:d:D:p:t:T:W:P:r:s:NH:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'c':
            o->component = optarg;
            break;
        case 'l':
            o->listen_addr = optarg;
            break;
        case 'w':
            o->workers = (int)strtol(optarg, &end, 10);
            if (*end || o->workers <= 0 || o->workers > 4096) {
                fprintf(stderr, "replay: --workers '%s': expected 1..4096\n", optarg);
                return 2;
            }
            break;
        case 'd':
            if (!(o->db = replay_cli_db_url_take("replay", optarg)))
                return 2;
            break;
        case 'D':
            o->dir = optarg;
            break;
        case 'p':
            o->peers = optarg;
            break;
        case 't':
            token_text = optarg;
            break;
        case 'T':
            token_file = optarg;
            break;
        case 'W':
            password_file = optarg;
            break;
        case 'P':
            o->pool = (int)strtol(optarg, &end, 10);
            if (*end || o->pool < 0 || o->pool > 65536) {
                fprintf(stderr, "replay: --pool '%s': expected 0..65536\n", optarg);
                return 2;
            }
            break;
        case 'r':
            o->ratio = strtod(optarg, &end);
            if (*end || !(o->ratio > 0) || !isfinite(o->ratio)) {
                fprintf(stderr, "replay: --cpu-ratio '%s': expected a positive number\n", optarg);
                return 2;
            }
            break;
        case 's':
            o->stats_path = optarg;
            break;
        case 'N':
            o->no_deps = 1;
            break;
        case 'H':
            o->hold = strtod(optarg, &end);
            if (*end || !(o->hold > 0) || o->hold > 3600) {
                fprintf(stderr, "replay: --hold '%s': expected seconds in (0, 3600]\n", optarg);
                return 2;
            }
            break;
        case 'h':
            replay_usage(stdout);
            return 1;
        default:
            replay_usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !o->component || !o->listen_addr) {
        fprintf(stderr, "replay: needs PLAN, --component and --listen (see --help)\n");
        return 2;
    }
    o->plan_path = argv[optind];
    if (replay_cli_token("replay", token_text, token_file, &o->token))
        return 2;
    if (password_file && !o->db) {
        fprintf(stderr, "replay: --db-password-file needs --db\n");
        return 2;
    }
    if (o->db && replay_cli_db_password("replay", o->db, password_file, o->db_password_buf,
                                        sizeof o->db_password_buf, &o->db_password))
        return 2;
    return 0;
}

/* Serves e's blocks on lfd (which the server takes) until SIGINT/SIGTERM,
 * after printing "listening ADDR" on stdout. 0 after the signal, 1 when
 * the server did not start. */
static int replay_serve(struct replay_engine *e, int lfd, const struct replay_cli_opts *o,
                        int workers)
{
    /* an event-loop component: `workers` loops, each with threads enough
     * for the requests it has in flight (replay_exec.h) */
    uint32_t loops = replay_engine_config(e)->event_loops;
    int threads =
        loops ? (int)(loops * REPLAY_LOOP_THREADS < 4096 ? loops * REPLAY_LOOP_THREADS : 4096)
              : workers;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char bound[128] = "?";
    if (!getsockname(lfd, (struct sockaddr *)&ss, &sl))
        replay_addr_format((struct sockaddr *)&ss, bound, sizeof bound);
    char err[512];
    struct replay_server *srv = replay_server_start(e, lfd, threads, stderr, err, sizeof err);
    if (!srv) {
        fprintf(stderr, "replay: %s\n", err);
        return 1;
    }
    printf("listening %s\n", bound);
    fflush(stdout);
    if (loops)
        fprintf(stderr, "replay: component %s on %s, %u event loops (%d threads), CPU ratio %.3f\n",
                o->component, bound, loops, threads, o->ratio);
    else
        fprintf(stderr, "replay: component %s on %s, %d workers, CPU ratio %.3f%s\n", o->component,
                bound, workers, o->ratio,
                o->no_deps ? ", --no-deps (recorded order per worker)" : "");
    int sig;
    sigwait(&set, &sig);
    replay_server_stop(srv);
    return 0;
}

/* --stats: the engine's counters as JSON; -1 after printing the failure.
 * Mode 0600, like traces: its db_errors hold query text. */
static int replay_write_stats(struct replay_engine *e, const char *path)
{
    /* never through a planted link (out_file.h) */
    char err[1024];
    struct out_file o;
    char *json = replay_engine_stats_json(e);
    FILE *f = NULL;
    int rc = json && !out_file_begin(&o, path, 0600, err, sizeof err) ? 0 : -1;
    if (!rc && (!(f = out_file_stream(&o, err, sizeof err)) || fputs(json, f) < 0)) {
        if (f)
            snprintf(err, sizeof err, "%s: cannot write stats: %s", path, strerror(errno));
        out_file_abort(&o);
        rc = -1;
    } else if (!rc) {
        rc = out_file_commit(&o, err, sizeof err);
    }
    if (rc)
        fprintf(stderr, "replay: %s\n", json ? err : "out of memory for the stats");
    free(json);
    return rc;
}

int cmd_replay(int argc, char **argv)
{
    struct replay_cli_opts o;
    int r = replay_parse_options(argc, argv, &o);
    if (r)
        return r == 1 ? 0 : 2;
    struct plan *p = replay_cli_load_plan(o.plan_path, "replay");
    if (!p)
        return 1;
    int rc = 1;
    struct replay_engine *e = NULL;
    int comp = replay_cli_component(p, o.component);
    if (comp < 0) {
        fprintf(stderr, "replay: %s: no component '%s' in the plan\n", o.plan_path, o.component);
        goto out;
    }
    char err[512];
    int lfd = replay_listen(o.listen_addr, err, sizeof err);
    if (lfd < 0) {
        fprintf(stderr, "replay: %s\n", err);
        goto out;
    }
    if (!(o.ratio > 0))
        o.ratio = replay_cli_cpu_ratio(p, "replay", NULL, NULL);
    if (replay_cli_calibrate("replay")) {
        close(lfd);
        goto out;
    }
    struct replay_config cfg = {.plan = p,
                                .component = (uint32_t)comp,
                                .dir = o.dir,
                                .db_url = o.db,
                                .db_password = o.db_password,
                                .peers_path = o.peers,
                                .token = o.token,
                                .pool = o.pool,
                                .cpu_ratio = o.ratio,
                                .no_deps = o.no_deps,
                                .no_deps_hold_s = o.hold};
    int workers = o.workers;
    if (!workers)
        workers = p->components[comp].workers ? (int)p->components[comp].workers : 1;
    /* --no-deps replays each recorded worker's blocks in order: no loops */
    if (p->components[comp].event_loop && !o.no_deps)
        cfg.event_loops = (uint32_t)workers;
    e = replay_engine_new(&cfg, err, sizeof err);
    if (!e) {
        fprintf(stderr, "replay: %s\n", err);
        close(lfd);
        goto out;
    }
    rc = replay_serve(e, lfd, &o, workers);
out:
    if (e && o.stats_path && replay_write_stats(e, o.stats_path))
        rc = 1;
    replay_engine_free(e);
    plan_free(p);
    return rc;
}

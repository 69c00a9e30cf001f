/* run_cli.c - `preplay run PLAN -o RESULTS`: the controller. Starts one
 * replayer per component as a child process on a loopback port with a fresh
 * random token, prepares the dummy files, snapshots the DB, then runs
 * interval after interval (restore files and DB, drive the schedule, collect
 * each replayer's counters) feeding the response times to the PT4Cloud
 * machine until it says stop or --max-intervals. A replayer that dies stops
 * the run with its name; results so far are written. With --hosts, the
 * components it lists run on other hosts over ssh (run_remote.c): local
 * replayers then listen on every address, and each host's peers file names
 * them by the address that host reaches us at. Ctrl-C (SIGINT/SIGTERM) ends
 * the run like a dead replayer does: results so far, everything stopped.
 * Must never leave a replayer running: children get SIGTERM at the end and
 * die with us (PR_SET_PDEATHSIG); remote ones are stopped over their ssh
 * session, whose end alone also stops them and removes their temp dir. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "replayer_cli.h"
#include "dummy_files.h"
#include "stats.h"
#include "replay_cli.h"
#include "replay_drive.h"
#include "replay_proto.h"
#include "replay_results.h"
#include "run_remote.h"

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

struct run_ctx {
    struct run_child *children;
    uint32_t nchildren;
    const char *dead; /* name of a replayer that died */
};

static volatile sig_atomic_t run_interrupted;

static void run_on_signal(int sig)
{
    run_interrupted = sig;
}

static double run_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Non-zero once a child has exited; remembers which. */
static int run_check_children(void *arg)
{
    struct run_ctx *ctx = arg;
    for (uint32_t i = 0; i < ctx->nchildren; i++) {
        struct run_child *c = &ctx->children[i];
        if (c->remote && !c->exited && run_remote_exited(c->remote, &c->status)) {
            c->exited = 1;
            if (!ctx->dead)
                ctx->dead = c->name;
        }
        if (!c->remote && c->pid > 0 && !c->exited &&
            waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
            c->exited = 1;
            if (!ctx->dead)
                ctx->dead = c->name;
        }
        if (c->exited)
            return 1;
    }
    return run_interrupted != 0;
}

static void run_describe_exit(const struct run_child *c, char *out, size_t outlen)
{
    if (WIFSIGNALED(c->status))
        snprintf(out, outlen, "killed by signal %d", WTERMSIG(c->status));
    else
        snprintf(out, outlen, "exited with status %d", WEXITSTATUS(c->status));
}

static int run_spawn(struct run_child *c, char **argv, double timeout_s, char *err, size_t errlen)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    c->pid = fork();
    if (c->pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (c->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        int logfd = open(c->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (logfd >= 0)
            dup2(logfd, 2);
        dup2(pfd[1], 1);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "run: exec /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    /* wait for "listening ADDR" */
    char buf[256];
    size_t got = 0;
    double deadline = run_now() + timeout_s;
    int rc = -1;
    while (run_now() < deadline && got < sizeof buf - 1) {
        struct pollfd p = {pfd[0], POLLIN, 0};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = read(pfd[0], buf + got, sizeof buf - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = 0;
        char *nl = strchr(buf, '\n');
        if (nl) {
            *nl = 0;
            if (!strncmp(buf, "listening ", 10)) {
                snprintf(c->addr, sizeof c->addr, "%s", buf + 10);
                rc = 0;
            }
            break;
        }
    }
    close(pfd[0]);
    if (rc) {
        char last[512];
        run_log_last_line(c->log, last, sizeof last);
        snprintf(err, errlen, "replayer for component '%s' did not start: %s", c->name,
                 last[0] ? last : "no 'listening' line in time");
    }
    return rc;
}

/* A control request (stats or reset) to one replayer; stats JSON (malloc'ed) or NULL. */
static char *run_control(const char *addr, uint64_t token, uint32_t block, char *err, size_t errlen)
{
    int fd = replay_connect(addr, 1, err, errlen);
    if (fd < 0)
        return NULL;
    struct replay_header h = {.block = block, .token = token};
    unsigned char hb[REPLAY_HEADER_SIZE], lb[4];
    replay_header_encode(&h, hb);
    char *text = NULL;
    if (replay_send_exact(fd, hb, sizeof hb, 0) || replay_recv_exact(fd, lb, 4)) {
        snprintf(err, errlen, "control request to %s failed", addr);
        goto out;
    }
    uint32_t len =
        (uint32_t)lb[0] | (uint32_t)lb[1] << 8 | (uint32_t)lb[2] << 16 | (uint32_t)lb[3] << 24;
    text = malloc((size_t)len + 1);
    if (!text || replay_recv_exact(fd, text, len)) {
        snprintf(err, errlen, "control answer from %s truncated", addr);
        free(text);
        text = NULL;
        goto out;
    }
    text[len] = 0;
out:
    close(fd);
    return text;
}

/* Runs argv with stdin/stdout redirected (NULL = inherit); exit status or -1. */
static int run_exec(char *const argv[], const char *in, const char *out)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (in) {
            int fd = open(in, O_RDONLY);
            if (fd < 0 || dup2(fd, 0) < 0)
                _exit(126);
        }
        if (out) {
            int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || dup2(fd, 1) < 0)
                _exit(126);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* DB snapshot by dump and reload with the mariadb clients. */
struct run_db {
    char host[256], user[128], password[128], db[128], socket[256], port[16];
    char dump_path[4200];
};

static int run_db_parse(const char *url, struct run_db *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    const char *s = strstr(url, "://");
    if (!s) {
        snprintf(err, errlen, "--db '%s': expected mysql://user:password@host:port/db", url);
        return -1;
    }
    s += 3;
    const char *at = strchr(s, '@');
    if (at) {
        const char *colon = memchr(s, ':', (size_t)(at - s));
        snprintf(d->user, sizeof d->user, "%.*s", (int)((colon ? colon : at) - s), s);
        if (colon)
            snprintf(d->password, sizeof d->password, "%.*s", (int)(at - colon - 1), colon + 1);
        s = at + 1;
    }
    const char *slash = strchr(s, '/');
    const char *he = slash ? slash : s + strlen(s);
    const char *pc = memchr(s, ':', (size_t)(he - s));
    snprintf(d->host, sizeof d->host, "%.*s", (int)((pc ? pc : he) - s), s);
    if (pc)
        snprintf(d->port, sizeof d->port, "%.*s", (int)(he - pc - 1), pc + 1);
    if (slash) {
        const char *q = strchr(slash + 1, '?');
        snprintf(d->db, sizeof d->db, "%.*s", (int)(q ? q - slash - 1 : (long)strlen(slash + 1)),
                 slash + 1);
        if (q && !strncmp(q + 1, "socket=", 7))
            snprintf(d->socket, sizeof d->socket, "%s", q + 8);
    }
    if (!d->db[0]) {
        snprintf(err, errlen, "--db '%s': no database name (…/DBNAME)", url);
        return -1;
    }
    return 0;
}

static int run_db_client(const struct run_db *d, const char *tool, const char *in, const char *out)
{
    char user[160], pass[160], host[300], port[40], sock[300];
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)tool;
    argv[n++] = "--no-defaults";
    if (d->socket[0]) {
        snprintf(sock, sizeof sock, "--socket=%s", d->socket);
        argv[n++] = sock;
    } else {
        snprintf(host, sizeof host, "--host=%s", d->host);
        argv[n++] = host;
        if (d->port[0]) {
            snprintf(port, sizeof port, "--port=%s", d->port);
            argv[n++] = port;
        }
    }
    if (d->user[0]) {
        snprintf(user, sizeof user, "--user=%s", d->user);
        argv[n++] = user;
    }
    if (d->password[0]) {
        snprintf(pass, sizeof pass, "--password=%s", d->password);
        argv[n++] = pass;
    }
    if (!strcmp(tool, "mariadb-dump")) {
        argv[n++] = "--single-transaction";
        argv[n++] = "--skip-lock-tables";
    }
    argv[n++] = (char *)d->db;
    argv[n] = NULL;
    return run_exec(argv, in, out);
}

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay run PLAN -o RESULTS [--db URL] [--p0 P] [--interval T]\n"
            "                   [--max-intervals N] [--mode independent|session] [--speed X]\n"
            "                   [--instance NAME] [--price USD_PER_HOUR] [--dir D]\n"
            "                   [--pool N] [--cpu-ratio R] [--no-deps]\n"
            "                   [--hosts FILE [--ssh-opts OPTS] [--ssh-timeout S]]\n\n"
            "Start a replayer per component (on loopback, or over ssh on the hosts FILE\n"
            "maps components to), then replay the plan's schedule interval after interval\n"
            "until PT4Cloud says the response times are stable.\n"
            "  --db URL          mysql://user:password@host:port/db (or ?socket=PATH); it is\n"
            "                    dumped before the first interval and reloaded before each\n"
            "  --p0 P            PT4Cloud objective probability (0.9)\n"
            "  --interval T      length of one interval (30s)\n"
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
            "  --log             stop rule on ln(response time): robust to rare huge\n"
            "                    outliers (docs/stats-accuracy.md); default: the paper's\n"
            "                    linear scale\n");
}

int cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {{"db", required_argument, 0, 'd'},
                                         {"p0", required_argument, 0, 'p'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"max-intervals", required_argument, 0, 'n'},
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
                                         {"output", required_argument, 0, 'o'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *db_url = NULL, *instance = "", *dir = NULL, *out = NULL, *pool = "64";
    double p0 = 0.9, interval = 30, speed = 1, price = NAN, ratio = 0;
    long max_intervals = 20, ssh_timeout = 10;
    int no_deps = 0, ratio_given = 0, log_scale = 0;
    const char *hosts_path = NULL, *ssh_opts = getenv("PREPLAY_SSH_OPTS");
    enum replay_drive_mode mode = REPLAY_DRIVE_INDEPENDENT;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:p:i:n:m:s:I:P:D:L:r:NH:S:T:Go:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'd':
            db_url = optarg;
            break;
        case 'p':
            p0 = strtod(optarg, &end);
            if (*end || !(p0 > 0 && p0 < 1)) {
                fprintf(stderr, "run: --p0 '%s': expected a probability in (0, 1)\n", optarg);
                return 2;
            }
            break;
        case 'i':
            if (replay_parse_duration(optarg, &interval) || !(interval > 0)) {
                fprintf(stderr, "run: --interval '%s': expected e.g. 30s, 2m\n", optarg);
                return 2;
            }
            break;
        case 'n':
            max_intervals = strtol(optarg, &end, 10);
            if (*end || max_intervals < 1 || max_intervals > 100000) {
                fprintf(stderr, "run: --max-intervals '%s': expected 1..100000\n", optarg);
                return 2;
            }
            break;
        case 'm':
            if (replay_parse_mode(optarg, &mode)) {
                fprintf(stderr, "run: --mode '%s': expected independent or session\n", optarg);
                return 2;
            }
            break;
        case 's':
            speed = strtod(optarg, &end);
            if (*end || !(speed > 0) || !isfinite(speed)) {
                fprintf(stderr, "run: --speed '%s': expected a positive number\n", optarg);
                return 2;
            }
            break;
        case 'I':
            instance = optarg;
            break;
        case 'P':
            price = strtod(optarg, &end);
            if (*end || !(price >= 0)) {
                fprintf(stderr, "run: --price '%s': expected USD per hour\n", optarg);
                return 2;
            }
            break;
        case 'D':
            dir = optarg;
            break;
        case 'L':
            pool = optarg;
            break;
        case 'r':
            ratio = strtod(optarg, &end);
            if (*end || !(ratio > 0) || !isfinite(ratio)) {
                fprintf(stderr, "run: --cpu-ratio '%s': expected a positive number\n", optarg);
                return 2;
            }
            ratio_given = 1;
            break;
        case 'H':
            hosts_path = optarg;
            break;
        case 'S':
            ssh_opts = optarg;
            break;
        case 'T':
            ssh_timeout = strtol(optarg, &end, 10);
            if (*end || ssh_timeout < 1 || ssh_timeout > 600) {
                fprintf(stderr, "run: --ssh-timeout '%s': expected 1..600 seconds\n", optarg);
                return 2;
            }
            break;
        case 'N':
            no_deps = 1;
            break;
        case 'G':
            log_scale = 1;
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            run_usage(stdout);
            return 0;
        default:
            run_usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !out) {
        fprintf(stderr, "run: needs PLAN and -o RESULTS (see --help)\n");
        return 2;
    }
    const char *plan_path = argv[optind];
    struct plan *p = replay_cli_load_plan(plan_path, "run");
    if (!p)
        return 1;
    int rc = 1;
    char err[1024] = "", work[] = "/tmp/preplay-run-XXXXXX", peers[4200], tokbuf[17], ratiobuf[32];
    struct run_ctx ctx = {0};
    struct dummy_files *files = NULL;
    struct stats_machine *m = NULL;
    json_t *root = NULL, *intervals = json_array(), *samples = json_array();
    json_t *resources = json_object(), *db_errors = json_array(), *restores = json_array();
    struct replay_label_set all = {0};
    struct run_db db;
    struct run_hosts hosts = {0};
    struct sigaction old_int, old_term;
    int have_work = 0, have_db = 0, frontend = -1, nremote = 0, have_handlers = 0;
    double dump_s = 0;
    uint64_t token = replay_token_random();
    replay_token_format(token, tokbuf);
    for (uint32_t i = 0; i < p->ncomponents && frontend < 0; i++)
        if (p->components[i].is_frontend)
            frontend = (int)i;
    if (frontend < 0 && p->nrequests && p->requests[0].block < p->nblocks)
        frontend = (int)p->blocks[p->requests[0].block].component;
    if (frontend < 0 || !p->nrequests) {
        fprintf(stderr, "run: %s: no front-end requests to replay\n", plan_path);
        goto out;
    }
    if (hosts_path) {
        if (run_hosts_read(hosts_path, &hosts, err, sizeof err)) {
            fprintf(stderr, "run: --hosts %s\n", err);
            goto out;
        }
        for (uint32_t i = 0; i < hosts.n; i++)
            if (replay_cli_component(p, hosts.hosts[i].component) < 0) {
                fprintf(stderr, "run: --hosts %s:%u: no component '%s' in %s\n", hosts_path,
                        hosts.hosts[i].line, hosts.hosts[i].component, plan_path);
                goto out;
            }
    }
    {
        /* Ctrl-C: stop at the next check, write what we have, stop everything */
        struct sigaction sa = {.sa_handler = run_on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        have_handlers = 1;
    }
    if (db_url && run_db_parse(db_url, &db, err, sizeof err)) {
        fprintf(stderr, "run: %s\n", err);
        goto out;
    }
    if (!mkdtemp(work)) {
        fprintf(stderr, "run: %s: %s\n", work, strerror(errno));
        goto out;
    }
    have_work = 1;
    char dirbuf[4200];
    if (!dir) {
        snprintf(dirbuf, sizeof dirbuf, "%s/files", work);
        dir = dirbuf;
    }
    /* dummy files */
    if (p->nfiles) {
        struct dummy_files_stats fst;
        files = dummy_files_open_plan(dir, p, err, sizeof err);
        if (!files || dummy_files_check_space(files, err, sizeof err) ||
            dummy_files_create(files, &fst, err, sizeof err)) {
            fprintf(stderr, "run: dummy files: %s\n", err);
            goto out;
        }
    }
    /* CPU ratio once for every replayer */
    if (!(ratio > 0))
        ratio = replay_cli_cpu_ratio(p, "run");
    snprintf(ratiobuf, sizeof ratiobuf, "%.6f", ratio);
    /* DB snapshot: dump now, reload before each interval */
    if (db_url) {
        snprintf(db.dump_path, sizeof db.dump_path, "%s/db-snapshot.sql", work);
        double t0 = run_now();
        int st = run_db_client(&db, "mariadb-dump", NULL, db.dump_path);
        dump_s = run_now() - t0;
        if (st) {
            fprintf(stderr,
                    "run: mariadb-dump of '%s' failed (status %d): cannot snapshot the DB\n", db.db,
                    st);
            goto out;
        }
        have_db = 1;
    }
    /* replayers: remote ones first, since local ones must know whether to
     * listen beyond loopback and the hosts say where they reach us */
    snprintf(peers, sizeof peers, "%s/peers", work);
    ctx.children = calloc(p->ncomponents, sizeof *ctx.children);
    if (!ctx.children)
        goto out;
    ctx.nchildren = p->ncomponents;
    for (uint32_t i = 0; i < p->ncomponents; i++) {
        struct run_child *ch = &ctx.children[i];
        ch->name = plan_string(p, p->components[i].name);
        snprintf(ch->log, sizeof ch->log, "%s/replay-%u.log", work, i);
        ch->host = hosts.n ? run_hosts_find(&hosts, ch->name) : NULL;
        if (ch->host) {
            run_host_describe(ch->host, ch->host_text, sizeof ch->host_text);
            nremote++;
        }
    }
    if (nremote) {
        /* each host measures its own CPU ratio unless --cpu-ratio was given */
        const char *rargs[12];
        int na = 0;
        rargs[na++] = "--pool";
        rargs[na++] = pool;
        if (db_url) {
            rargs[na++] = "--db";
            rargs[na++] = db_url;
        }
        if (no_deps)
            rargs[na++] = "--no-deps";
        if (ratio_given) {
            rargs[na++] = "--cpu-ratio";
            rargs[na++] = ratiobuf;
        }
        rargs[na] = NULL;
        /* every host copies at once, then each starts its agent and replayer
         * (which calibrate in parallel) */
        struct run_remote_config *rcfg = calloc(ctx.nchildren, sizeof *rcfg);
        if (!rcfg)
            goto out;
        for (uint32_t i = 0; i < ctx.nchildren && !run_interrupted; i++) {
            struct run_child *ch = &ctx.children[i];
            if (!ch->host)
                continue;
            rcfg[i] = (struct run_remote_config){.host = ch->host,
                                                 .ssh_opts = ssh_opts,
                                                 .connect_timeout_s = (int)ssh_timeout,
                                                 .plan_path = plan_path,
                                                 .log_path = ch->log,
                                                 .token = token,
                                                 .replay_args = rargs};
            ch->remote = run_remote_begin(&rcfg[i], err, sizeof err);
            if (!ch->remote) {
                fprintf(stderr, "run: component '%s': %s\n", ch->name, err);
                free(rcfg);
                goto out;
            }
        }
        for (uint32_t i = 0; i < ctx.nchildren && !run_interrupted; i++) {
            struct run_child *ch = &ctx.children[i];
            if (!ch->remote)
                continue;
            if (run_remote_start(ch->remote, &rcfg[i], err, sizeof err)) {
                fprintf(stderr, "run: component '%s': %s\n", ch->name, err);
                free(rcfg);
                goto out;
            }
            ch->pid = run_remote_ssh_pid(ch->remote);
        }
        free(rcfg);
        for (uint32_t i = 0; i < ctx.nchildren && !run_interrupted; i++) {
            struct run_child *ch = &ctx.children[i];
            if (ch->remote && run_remote_wait_listening(ch->remote, 300, ch->addr, sizeof ch->addr,
                                                        err, sizeof err)) {
                fprintf(stderr, "run: component '%s': %s\n", ch->name, err);
                goto out;
            }
        }
    }
    const char *local_listen = "127.0.0.1:0";
    for (uint32_t i = 0; i < ctx.nchildren; i++)
        if (ctx.children[i].remote)
            local_listen =
                strchr(run_remote_client_ip(ctx.children[i].remote), ':') ? "[::]:0" : "0.0.0.0:0";
    for (uint32_t i = 0; i < p->ncomponents && !run_interrupted; i++) {
        struct run_child *ch = &ctx.children[i];
        if (ch->host)
            continue;
        char *cargv[24];
        int n = 0;
        cargv[n++] = "preplay";
        cargv[n++] = "replay";
        cargv[n++] = (char *)plan_path;
        cargv[n++] = "--component";
        cargv[n++] = (char *)ch->name;
        cargv[n++] = "--listen";
        cargv[n++] = (char *)local_listen;
        cargv[n++] = "--token";
        cargv[n++] = tokbuf;
        cargv[n++] = "--peers";
        cargv[n++] = peers;
        cargv[n++] = "--dir";
        cargv[n++] = (char *)dir;
        cargv[n++] = "--cpu-ratio";
        cargv[n++] = ratiobuf;
        cargv[n++] = "--pool";
        cargv[n++] = (char *)pool;
        if (db_url) {
            cargv[n++] = "--db";
            cargv[n++] = (char *)db_url;
        }
        if (no_deps)
            cargv[n++] = "--no-deps";
        cargv[n] = NULL;
        if (run_spawn(ch, cargv, 60, err, sizeof err)) {
            fprintf(stderr, "run: %s\n", err);
            goto out;
        }
        /* bound to every address: reach it on loopback from here */
        const char *port = strrchr(ch->addr, ':');
        if (port && strcmp(local_listen, "127.0.0.1:0")) {
            char here[128];
            snprintf(here, sizeof here, "%s%s", local_listen[0] == '[' ? "[::1]" : "127.0.0.1",
                     port);
            snprintf(ch->addr, sizeof ch->addr, "%s", here);
        }
    }
    if (run_interrupted) {
        fprintf(stderr, "run: interrupted while starting the replayers\n");
        goto out;
    }
    {
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.tmp", peers);
        FILE *f = fopen(tmp, "w");
        if (!f)
            goto out;
        for (uint32_t i = 0; i < ctx.nchildren; i++)
            fprintf(f, "%s %s\n", ctx.children[i].name, ctx.children[i].addr);
        if (fclose(f) || rename(tmp, peers)) {
            fprintf(stderr, "run: %s: cannot write the peers file\n", peers);
            goto out;
        }
    }
    /* each host's peers file: local replayers by the address it reaches us at */
    for (uint32_t i = 0; i < ctx.nchildren; i++) {
        struct run_child *ch = &ctx.children[i];
        if (!ch->remote)
            continue;
        const char *me = run_remote_client_ip(ch->remote);
        size_t cap = 256 * (size_t)ctx.nchildren + 1, used = 0;
        char *text = malloc(cap);
        if (!text)
            goto out;
        text[0] = 0;
        for (uint32_t j = 0; j < ctx.nchildren; j++) {
            const struct run_child *o = &ctx.children[j];
            const char *port = strrchr(o->addr, ':');
            if (o->remote || !port)
                used += (size_t)snprintf(text + used, cap - used, "%s %s\n", o->name, o->addr);
            else
                used += (size_t)snprintf(text + used, cap - used,
                                         strchr(me, ':') ? "%s [%s]%s\n" : "%s %s%s\n", o->name, me,
                                         port);
            if (used >= cap)
                used = cap - 1;
        }
        int bad = run_remote_send_peers(ch->remote, text, err, sizeof err);
        free(text);
        if (bad) {
            fprintf(stderr, "run: component '%s': %s\n", ch->name, err);
            goto out;
        }
    }
    struct stats_config cfg;
    stats_config_default(&cfg);
    cfg.p0 = p0;
    cfg.interval = interval;
    cfg.max_interval = interval;
    cfg.kde.log_scale = log_scale;
    m = stats_machine_new(&cfg, err);
    if (!m) {
        fprintf(stderr, "run: %s\n", err);
        goto out;
    }
    int tty = isatty(2);
    int stopped = 0;
    for (long iv = 1; iv <= max_intervals && !stopped; iv++) {
        if (run_interrupted)
            goto write;
        /* the same starting state every interval, on every host at once */
        double tr = run_now(), files_s = 0, db_s = 0;
        for (uint32_t i = 0; i < ctx.nchildren; i++)
            if (ctx.children[i].remote &&
                run_remote_restore_begin(ctx.children[i].remote, err, sizeof err))
                goto remote_failed;
        if (files) {
            /* sizes here; each replayer rewrites the ranges it wrote at RESET */
            struct dummy_files_stats fst;
            if (dummy_files_restore(files, 0, &fst, err, sizeof err)) {
                fprintf(stderr, "run: interval %ld: restoring dummy files: %s\n", iv, err);
                goto write;
            }
        }
        for (uint32_t i = 0; i < ctx.nchildren; i++)
            if (ctx.children[i].remote &&
                run_remote_restore_end(ctx.children[i].remote, 600, err, sizeof err))
                goto remote_failed;
        files_s = run_now() - tr;
        if (have_db) {
            double t0 = run_now();
            int st = run_db_client(&db, "mariadb", db.dump_path, NULL);
            db_s = run_now() - t0;
            if (st) {
                fprintf(stderr, "run: interval %ld: reloading the DB snapshot failed (status %d)\n",
                        iv, st);
                goto write;
            }
        }
        results_restore_append(restores, iv, files_s, db_s);
        for (uint32_t i = 0; i < ctx.nchildren; i++) {
            char *r = run_control(ctx.children[i].addr, token, REPLAY_BLOCK_RESET, err, sizeof err);
            free(r);
        }
        struct replay_drive_options o = {.plan = p,
                                         .target = ctx.children[frontend].addr,
                                         .token = token,
                                         .mode = mode,
                                         .speed = speed,
                                         .duration_s = stats_machine_interval_length(m),
                                         .should_abort = run_check_children,
                                         .abort_arg = &ctx};
        struct replay_drive_result r;
        if (replay_drive_run(&o, &r, err, sizeof err)) {
            fprintf(stderr, "run: interval %ld: %s\n", iv, err);
            goto write;
        }
        if (r.aborted || run_check_children(&ctx)) {
            replay_drive_result_free(&r);
            goto write;
        }
        for (uint32_t i = 0; i < ctx.nchildren; i++) {
            char *st =
                run_control(ctx.children[i].addr, token, REPLAY_BLOCK_STATS, err, sizeof err);
            if (st)
                results_resources_add(resources, db_errors, ctx.children[i].name, st);
            free(st);
        }
        /* feed PT4Cloud: overall and per label, successful responses only */
        struct replay_label_set ls = {0};
        if (replay_label_set_add(&ls, r.samples, r.nsamples) ||
            replay_label_set_add(&all, r.samples, r.nsamples) ||
            replay_results_samples(samples, p, r.samples, r.nsamples, (int)iv)) {
            replay_label_set_free(&ls);
            replay_drive_result_free(&r);
            fprintf(stderr, "run: out of memory\n");
            goto write;
        }
        struct stats_label_samples *lab = calloc(ls.nlabels ? ls.nlabels : 1, sizeof *lab);
        for (size_t l = 0; lab && l < ls.nlabels; l++)
            lab[l] = (struct stats_label_samples){plan_string(p, ls.label_ids[l]), ls.values[l],
                                                  ls.counts[l]};
        struct stats_step step;
        int fed = lab && !stats_machine_feed(m, ls.all, ls.nall, lab, ls.nlabels, &step, err);
        struct results_interval ri = {.interval = iv,
                                      .requests = r.nsamples,
                                      .failed = r.failed,
                                      .length_s = o.duration_s,
                                      .lateness = replay_results_lateness(r.samples, r.nsamples),
                                      .fed = fed};
        if (fed) {
            ri.compared = step.compared;
            ri.p = step.p;
            ri.action = stats_action_name(step.action);
            ri.held_open_by = step.held_open_by;
            stopped = step.action == STATS_STOP;
        }
        json_t *ij = results_interval_json(&ri);
        json_array_append_new(intervals, ij);
        char pbuf[32] = "n/a";
        if (fed && step.compared)
            snprintf(pbuf, sizeof pbuf, "%.3f", step.p);
        fprintf(stderr, "%sinterval %ld: %zu requests (%llu failed), p %s%s%s%s", tty ? "\r" : "",
                iv, r.nsamples, (unsigned long long)r.failed, pbuf,
                fed && step.held_open_by[0] ? ", held open by " : "", fed ? step.held_open_by : "",
                tty ? "\033[K" : "\n");
        free(lab);
        replay_label_set_free(&ls);
        replay_drive_result_free(&r);
        if (!fed) {
            fprintf(stderr, "%srun: interval %ld: %s\n", tty ? "\n" : "", iv, err);
            goto write;
        }
    }
    if (tty)
        fprintf(stderr, "\n");
    rc = 0;
    if (0) {
    remote_failed:
        /* a host that stopped answering: a death if its session ended */
        if (!run_check_children(&ctx))
            fprintf(stderr, "run: %s\n", err);
    }
write:
    if (run_interrupted) {
        fprintf(stderr,
                "%srun: interrupted by signal %d during interval %zu: results so far kept\n",
                tty ? "\n" : "", (int)run_interrupted, json_array_size(intervals) + 1);
        ctx.dead = NULL;
        rc = 128 + run_interrupted;
    } else if (ctx.dead) {
        for (uint32_t i = 0; i < ctx.nchildren; i++)
            if (ctx.children[i].exited) {
                struct run_child *ch = &ctx.children[i];
                char how[400], last[512];
                if (ch->remote)
                    run_remote_describe_end(ch->remote, how, sizeof how);
                else
                    run_describe_exit(ch, how, sizeof how);
                run_log_last_line(ch->log, last, sizeof last);
                fprintf(stderr,
                        "%srun: the replayer for component '%s'%s%s %s during interval %zu%s%s\n",
                        tty ? "\n" : "", ch->name, ch->remote ? " on " : "",
                        ch->remote ? ch->host_text : "", how, json_array_size(intervals) + 1,
                        last[0] ? ": " : "", last);
                ctx.dead = ch->name;
                break;
            }
        rc = 1;
    }
    size_t error_len = ctx.dead ? strlen(ctx.dead) + 32 : 1;
    char *error = malloc(error_len);
    if (error)
        snprintf(error, error_len, "replayer '%s' died", ctx.dead ? ctx.dead : "");
    json_t *hj = nremote ? json_object() : NULL;
    for (uint32_t i = 0; hj && i < ctx.nchildren; i++)
        if (ctx.children[i].remote)
            results_host_set(hj, ctx.children[i].name, ctx.children[i].host_text,
                             ctx.children[i].addr, run_remote_client_ip(ctx.children[i].remote),
                             run_remote_dir(ctx.children[i].remote));
    struct results_run doc = {.plan = plan_path,
                              .recording_id = p->recording_id,
                              .instance = instance,
                              .mode = mode == REPLAY_DRIVE_SESSION ? "session" : "independent",
                              .scale = log_scale ? "log" : "linear",
                              .error = run_interrupted ? "interrupted"
                                       : ctx.dead      ? error
                                                       : NULL,
                              .price = price,
                              .speed = speed,
                              .cpu_ratio = ratio,
                              .p0 = p0,
                              .no_deps = no_deps,
                              .stopped = m && stats_machine_stopped(m),
                              .hosts = hj,
                              .labels = replay_results_labels(p, &all, 1),
                              .intervals = intervals,
                              .resources = resources,
                              .db_errors = db_errors,
                              .samples = samples,
                              .db_method = have_db ? "mariadb-dump, reloaded with mariadb" : "none",
                              .db_dump_s = dump_s,
                              .restores = restores};
    intervals = resources = db_errors = restores = samples = NULL;
    root = error ? results_run_json(&doc) : NULL;
    free(error);
    if (!root)
        snprintf(err, sizeof err, "out of memory building results");
    if (!root || results_save(root, out, err, sizeof err)) {
        fprintf(stderr, "run: %s\n", err);
        rc = 1;
    }
out:
    for (uint32_t i = 0; i < ctx.nchildren; i++)
        if (ctx.children[i].pid > 0 && !ctx.children[i].exited && !ctx.children[i].remote)
            kill(ctx.children[i].pid, SIGTERM);
    for (uint32_t i = 0; i < ctx.nchildren; i++) {
        run_remote_stop(ctx.children[i].remote);
        ctx.children[i].remote = NULL;
    }
    for (uint32_t i = 0; i < ctx.nchildren; i++) {
        struct run_child *ch = &ctx.children[i];
        if (ch->pid <= 0 || ch->exited || ch->host)
            continue;
        for (int k = 0; k < 50 && waitpid(ch->pid, &ch->status, WNOHANG) == 0; k++)
            usleep(20000);
        if (kill(ch->pid, 0) == 0) {
            kill(ch->pid, SIGKILL);
            waitpid(ch->pid, &ch->status, 0);
        }
    }
    free(ctx.children);
    run_hosts_free(&hosts);
    if (have_handlers) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    if (have_work && rc == 0) {
        char *rm[] = {"rm", "-rf", work, NULL};
        run_exec(rm, NULL, NULL);
    } else if (have_work) {
        fprintf(stderr, "run: replayer logs kept in %s\n", work);
    }
    json_decref(root);
    json_decref(intervals);
    json_decref(samples);
    json_decref(resources);
    json_decref(db_errors);
    json_decref(restores);
    replay_label_set_free(&all);
    stats_machine_free(m);
    dummy_files_close(files);
    plan_free(p);
    return rc;
}

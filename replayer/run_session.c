/* run_session.c - the resources of one `preplay run` and their teardown:
 * starts one replayer per component as a child process on a loopback port
 * with the run's random token (or, with --hosts, on other hosts over ssh,
 * run_remote.c: local replayers then listen on every address, and each
 * host's peers file names them by the address that host reaches us at),
 * prepares the dummy files, snapshots the DB, restores both before each
 * interval, and watches for a replayer's death or Ctrl-C (SIGINT/SIGTERM).
 * Secrets never go on a command line (`ps` shows them to every user): a
 * local replayer reads the token and the DB password from inherited pipes
 * (--token-file /dev/fd/3, --db-password-file /dev/fd/4), remote ones get
 * them on the agent's ssh channel, the mariadb clients from an option file
 * (pg_dump/pg_restore from a password file, run_db_pg.c).
 * Everything it starts or makes is in struct run_session and
 * run_session_close alone undoes it. Must never leave a replayer running:
 * children get SIGTERM at the end and die with us (PR_SET_PDEATHSIG);
 * remote ones are stopped over their ssh session, whose end alone also
 * stops them and removes their temp dir. */
#include "run_session.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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

#include "dummy_files.h"
#include "out_file.h"
#include "run_db_pg.h"
#include "replay_cli.h"
#include "replay_db_pg.h"
#include "replay_proto.h"
#include "stats.h"

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

int run_session_interrupted(void)
{
    return run_interrupted;
}

int run_session_check_children(void *arg)
{
    struct run_session *s = arg;
    for (uint32_t i = 0; i < s->nchildren; i++) {
        struct run_child *c = &s->children[i];
        if (c->remote && !c->exited && run_remote_exited(c->remote, &c->status)) {
            c->exited = 1;
            if (!s->dead)
                s->dead = c->name;
        }
        if (!c->remote && c->pid > 0 && !c->exited &&
            waitpid(c->pid, &c->status, WNOHANG) == c->pid) {
            c->exited = 1;
            if (!s->dead)
                s->dead = c->name;
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

/* A pipe whose read end yields `secret` and a line end, then EOF; -1 on
 * failure. The secret fits the pipe's buffer, so nothing blocks. */
static int run_secret_pipe(const char *secret)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        return -1;
    size_t len = strlen(secret);
    int bad = write(p[1], secret, len) != (ssize_t)len || write(p[1], "\n", 1) != 1;
    close(p[1]);
    if (bad) {
        close(p[0]);
        return -1;
    }
    return p[0];
}

/* In the child: secret pipes at descriptors 3, 4, ... (as argv names them). */
static void run_spawn_secret_fds(const int *fds, int n)
{
    int high[4];
    for (int i = 0; i < n && i < 4; i++) /* out of the way of 3.. first */
        if ((high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64)) < 0)
            _exit(126);
    for (int i = 0; i < n && i < 4; i++)
        if (dup2(high[i], 3 + i) < 0)
            _exit(126);
}

/* Starts argv (preplay itself) with `nsecrets` secrets readable at
 * /dev/fd/3, /dev/fd/4, ...; waits for its "listening ADDR". */
static int run_spawn(struct run_child *c, char **argv, const char *const *secrets, int nsecrets,
                     double timeout_s, char *err, size_t errlen)
{
    int pfd[2], sfd[4] = {-1, -1, -1, -1};
    for (int i = 0; i < nsecrets && i < 4; i++)
        if ((sfd[i] = run_secret_pipe(secrets[i])) < 0) {
            snprintf(err, errlen, "pipe: %s", strerror(errno));
            for (int k = 0; k < i; k++)
                close(sfd[k]);
            return -1;
        }
    if (pipe2(pfd, O_CLOEXEC)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        for (int k = 0; k < nsecrets && k < 4; k++)
            close(sfd[k]);
        return -1;
    }
    pid_t parent = getpid();
    c->pid = fork();
    if (c->pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        for (int k = 0; k < nsecrets && k < 4; k++)
            close(sfd[k]);
        return -1;
    }
    if (c->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        char lerr[256]; /* never through a planted link (out_file.h) */
        int logfd = out_file_create(c->log, O_WRONLY, 0644, lerr, sizeof lerr);
        if (logfd >= 0)
            dup2(logfd, 2);
        dup2(pfd[1], 1);
        run_spawn_secret_fds(sfd, nsecrets);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "run: exec /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    for (int k = 0; k < nsecrets && k < 4; k++)
        close(sfd[k]);
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

int run_exec(char *const argv[], const char *in, const char *out, const char *env_name,
             const char *env_value)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (env_name && env_value)
            setenv(env_name, env_value, 1);
        if (in) {
            int fd = open(in, O_RDONLY);
            if (fd < 0 || dup2(fd, 0) < 0)
                _exit(126);
        }
        if (out) {
            char oerr[256]; /* never through a planted link (out_file.h) */
            int fd = out_file_create(out, O_WRONLY, 0600, oerr, sizeof oerr);
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

/* libpq's default socket directory on Debian */
#define RUN_DB_PG_SOCKET_DIR "/var/run/postgresql"

/* A URL query value [v, end) into out, %XX decoded (a socket path is
 * written %2F...), cut at outlen. */
static void run_db_param(char *out, size_t outlen, const char *v, const char *end)
{
    size_t n = 0;
    while (v < end && n + 1 < outlen) {
        if (*v == '%' && end - v >= 3 && isxdigit((unsigned char)v[1]) &&
            isxdigit((unsigned char)v[2])) {
            char hex[3] = {v[1], v[2], 0};
            out[n++] = (char)strtol(hex, NULL, 16);
            v += 3;
        } else {
            out[n++] = *v++;
        }
    }
    out[n] = 0;
}

/* The --db URL's parts: user, password, host, port, database, and the
 * socket (mysql: ?socket=; postgresql: ?host=DIR or no host, libpq's
 * socket file there), for the dump clients and the run's placement. */
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
        int pg = replay_db_pg_url(url);
        for (const char *k = q; k && *k;) {
            k++;
            const char *amp = strchr(k, '&'), *end = amp ? amp : k + strlen(k);
            if (!pg && !strncmp(k, "socket=", 7))
                run_db_param(d->socket, sizeof d->socket, k + 7, end);
            else if (pg && !strncmp(k, "host=", 5))
                run_db_param(d->host, sizeof d->host, k + 5, end);
            else if (pg && !strncmp(k, "port=", 5))
                run_db_param(d->port, sizeof d->port, k + 5, end);
            k = amp;
        }
    }
    if (!d->db[0]) {
        snprintf(err, errlen, "--db '%s': no database name (…/DBNAME)", url);
        return -1;
    }
    /* libpq's defaults: port 5432; no host, or a directory as the host,
     * is a Unix socket named by the port in that directory */
    if (replay_db_pg_url(url)) {
        if (!d->port[0])
            snprintf(d->port, sizeof d->port, "5432");
        if (!d->host[0] || d->host[0] == '/') {
            snprintf(d->socket, sizeof d->socket, "%.200s/.s.PGSQL.%.8s",
                     d->host[0] ? d->host : RUN_DB_PG_SOCKET_DIR, d->port);
            d->host[0] = 0;
        }
    }
    return 0;
}

static int run_db_client(const struct run_db *d, const char *tool, const char *in, const char *out)
{
    char user[160], host[300], port[40], sock[300], cnf[4300];
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)tool;
    /* --defaults-file reads that file alone: as isolated as --no-defaults */
    if (d->cnf_path[0]) {
        snprintf(cnf, sizeof cnf, "--defaults-file=%s", d->cnf_path);
        argv[n++] = cnf;
    } else {
        argv[n++] = "--no-defaults";
    }
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
    if (!strcmp(tool, "mariadb-dump")) {
        argv[n++] = "--single-transaction";
        argv[n++] = "--skip-lock-tables";
    }
    argv[n++] = (char *)d->db;
    argv[n] = NULL;
    return run_exec(argv, in, out, NULL, NULL);
}

/* The password for the mariadb clients, in an option file only we can
 * read (the run's temp dir is 0700): quoted, with \\ and \" escaped. */
static int run_db_write_cnf(struct run_db *d, const char *work)
{
    if (!d->password[0])
        return 0;
    snprintf(d->cnf_path, sizeof d->cnf_path, "%s/db.cnf", work);
    int fd = open(d->cnf_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int bad = !f || fputs("[client]\npassword=\"", f) < 0;
    for (const char *c = d->password; !bad && *c; c++)
        bad = ((*c == '\\' || *c == '"') && fputc('\\', f) < 0) || fputc(*c, f) < 0;
    bad = bad || fputs("\"\n", f) < 0;
    if (f)
        bad = fclose(f) || bad;
    else if (fd >= 0)
        close(fd);
    if (bad) {
        fprintf(stderr, "run: %s: cannot write the DB option file: %s\n", d->cnf_path,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* --db: the password (file, environment or URL), the URL without it for
 * local replayers' command lines. */
static int run_db_setup(struct run_db *d, const struct run_config *cfg)
{
    char err[1024], buf[256], url_pw[256];
    const char *pw;
    if (run_db_parse(cfg->db_url, d, err, sizeof err)) {
        fprintf(stderr, "run: %s\n", err);
        return -1;
    }
    if (replay_cli_db_password("run", cfg->db_url, cfg->db_password_file, buf, sizeof buf, &pw))
        return -1;
    replay_cli_db_url_split(cfg->db_url, d->url_clean, sizeof d->url_clean, url_pw, sizeof url_pw);
    if (pw)
        snprintf(d->password, sizeof d->password, "%s", pw);
    memset(buf, 0, sizeof buf);
    memset(url_pw, 0, sizeof url_pw);
    return 0;
}

char *run_session_control(const struct run_session *s, uint32_t i, uint32_t block, char *err,
                          size_t errlen)
{
    return run_control(s->children[i].addr, s->token, block, err, errlen);
}

int run_session_open(struct run_session *s, const struct run_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->p = replay_cli_load_plan(cfg->plan_path, "run");
    if (!s->p)
        return -1;
    s->frontend = -1;
    s->tty = isatty(2);
    s->ratio = cfg->ratio;
    s->dir = cfg->dir;
    snprintf(s->work, sizeof s->work, "/tmp/preplay-run-XXXXXX");
    s->intervals = json_array();
    s->samples = json_array();
    s->resources = json_object();
    s->db_errors = json_array();
    s->restores = json_array();
    s->token = replay_token_random();
    replay_token_format(s->token, s->tokbuf);
    return 0;
}

/* The component the driver sends to, and the hosts file's components. */
static int run_session_check_plan(struct run_session *s)
{
    const struct plan *p = s->p;
    const char *plan_path = s->cfg->plan_path, *hosts_path = s->cfg->hosts_path;
    char err[1024];
    for (uint32_t i = 0; i < p->ncomponents && s->frontend < 0; i++)
        if (p->components[i].is_frontend)
            s->frontend = (int)i;
    if (s->frontend < 0 && p->nrequests && p->requests[0].block < p->nblocks)
        s->frontend = (int)p->blocks[p->requests[0].block].component;
    if (s->frontend < 0 || !p->nrequests) {
        fprintf(stderr, "run: %s: no front-end requests to replay\n", plan_path);
        return -1;
    }
    if (!hosts_path)
        return 0;
    if (run_hosts_read(hosts_path, &s->hosts, err, sizeof err)) {
        fprintf(stderr, "run: --hosts %s\n", err);
        return -1;
    }
    for (uint32_t i = 0; i < s->hosts.n; i++)
        if (replay_cli_component(p, s->hosts.hosts[i].component) < 0) {
            fprintf(stderr, "run: --hosts %s:%u: no component '%s' in %s\n", hosts_path,
                    s->hosts.hosts[i].line, s->hosts.hosts[i].component, plan_path);
            return -1;
        }
    return 0;
}

/* Ctrl-C: stop at the next check, write what we have, stop everything. */
static void run_session_handlers(struct run_session *s)
{
    struct sigaction sa = {.sa_handler = run_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
    s->have_handlers = 1;
}

/* The temp dir, the dummy files, the CPU ratio once for every replayer,
 * and the DB snapshot: dumped now, reloaded before each interval. */
static int run_session_prepare_state(struct run_session *s)
{
    const struct run_config *cfg = s->cfg;
    char err[1024];
    if (cfg->db_url && run_db_setup(&s->db, cfg))
        return -1;
    if (!mkdtemp(s->work)) {
        fprintf(stderr, "run: %s: %s\n", s->work, strerror(errno));
        return -1;
    }
    s->have_work = 1;
    s->db.pg = cfg->db_url && replay_db_pg_url(cfg->db_url);
    if (s->db.pg && run_db_pg_passfile(s->work, s->db.password, s->db.cnf_path,
                                       sizeof s->db.cnf_path, err, sizeof err)) {
        fprintf(stderr, "run: %s\n", err);
        return -1;
    }
    if (cfg->db_url && !s->db.pg && run_db_write_cnf(&s->db, s->work))
        return -1;
    if (!s->dir) {
        snprintf(s->dirbuf, sizeof s->dirbuf, "%s/files", s->work);
        s->dir = s->dirbuf;
    }
    if (s->p->nfiles) {
        struct dummy_files_stats fst;
        s->files = dummy_files_open_plan(s->dir, s->p, err, sizeof err);
        if (!s->files || dummy_files_check_space(s->files, err, sizeof err) ||
            dummy_files_create(s->files, &fst, err, sizeof err)) {
            fprintf(stderr, "run: dummy files: %s\n", err);
            return -1;
        }
    }
    if (!(s->ratio > 0))
        s->ratio = replay_cli_cpu_ratio(s->p, "run", &s->ratio_lo, &s->ratio_hi);
    snprintf(s->ratiobuf, sizeof s->ratiobuf, "%.6f", s->ratio);
    if (cfg->db_url) {
        snprintf(s->db.dump_path, sizeof s->db.dump_path, "%s/db-snapshot.sql", s->work);
        double t0 = run_now();
        int st = s->db.pg ? run_db_pg_dump(s->db.url_clean, s->db.cnf_path, s->db.dump_path)
                          : run_db_client(&s->db, "mariadb-dump", NULL, s->db.dump_path);
        s->dump_s = run_now() - t0;
        if (st) {
            fprintf(stderr, "run: %s of '%s' failed (status %d): cannot snapshot the DB\n",
                    s->db.pg ? "pg_dump" : "mariadb-dump", s->db.db, st);
            return -1;
        }
        s->have_db = 1;
    }
    return 0;
}

/* The workers all local replayers may start together (a plan may give each
 * of its 4096 components 4096). */
#define RUN_MAX_LOCAL_WORKERS (4u * PLAN_MAX_WORKERS)

/* One child per component: its name, log, and host when it runs elsewhere. */
static int run_session_children_init(struct run_session *s)
{
    const struct plan *p = s->p;
    snprintf(s->peers, sizeof s->peers, "%s/peers", s->work);
    s->children = calloc(p->ncomponents, sizeof *s->children);
    if (!s->children)
        return -1;
    s->nchildren = p->ncomponents;
    for (uint32_t i = 0; i < p->ncomponents; i++) {
        struct run_child *ch = &s->children[i];
        ch->name = plan_string(p, p->components[i].name);
        snprintf(ch->log, sizeof ch->log, "%s/replay-%u.log", s->work, i);
        ch->host = s->hosts.n ? run_hosts_find(&s->hosts, ch->name) : NULL;
        if (ch->host) {
            run_host_describe(ch->host, ch->host_text, sizeof ch->host_text);
            s->nremote++;
        }
    }
    /* each component's replayer is bounded by the plan (PLAN_MAX_WORKERS);
     * so are all of them on this machine together */
    uint64_t local = 0;
    for (uint32_t i = 0; i < p->ncomponents; i++)
        if (!s->children[i].host)
            local += p->components[i].workers ? p->components[i].workers : 1;
    if (local > RUN_MAX_LOCAL_WORKERS) {
        fprintf(stderr,
                "run: %s: workers of the components replayed here %llu exceeds the limit %u "
                "(place some elsewhere with --hosts)\n",
                s->cfg->plan_path, (unsigned long long)local, RUN_MAX_LOCAL_WORKERS);
        return -1;
    }
    return 0;
}

/* Every host copies at once, then each starts its agent and replayer
 * (which calibrate in parallel), then we wait for each to listen. */
static int run_session_start_remote_all(struct run_session *s, struct run_remote_config *rcfg,
                                        const char *const *rargs)
{
    const struct run_config *cfg = s->cfg;
    char err[1024];
    for (uint32_t i = 0; i < s->nchildren && !run_interrupted; i++) {
        struct run_child *ch = &s->children[i];
        if (!ch->host)
            continue;
        rcfg[i] = (struct run_remote_config){.host = ch->host,
                                             .ssh_opts = cfg->ssh_opts,
                                             .connect_timeout_s = (int)cfg->ssh_timeout,
                                             .plan_path = cfg->plan_path,
                                             .log_path = ch->log,
                                             .token = s->token,
                                             .db_password = s->db.password,
                                             .replay_args = rargs};
        ch->remote = run_remote_begin(&rcfg[i], err, sizeof err);
        if (!ch->remote) {
            fprintf(stderr, "run: component '%s': %s\n", ch->name, err);
            return -1;
        }
    }
    for (uint32_t i = 0; i < s->nchildren && !run_interrupted; i++) {
        struct run_child *ch = &s->children[i];
        if (!ch->remote)
            continue;
        if (run_remote_start(ch->remote, &rcfg[i], err, sizeof err)) {
            fprintf(stderr, "run: component '%s': %s\n", ch->name, err);
            return -1;
        }
        ch->pid = run_remote_ssh_pid(ch->remote);
    }
    for (uint32_t i = 0; i < s->nchildren && !run_interrupted; i++) {
        struct run_child *ch = &s->children[i];
        if (ch->remote && run_remote_wait_listening(ch->remote, 300, ch->addr, sizeof ch->addr, err,
                                                    sizeof err)) {
            fprintf(stderr, "run: component '%s': %s\n", ch->name, err);
            return -1;
        }
    }
    return 0;
}

/* The remote replayers: each host measures its own CPU ratio unless
 * --cpu-ratio was given. */
static int run_session_start_remote(struct run_session *s)
{
    const struct run_config *cfg = s->cfg;
    const char *rargs[12];
    int na = 0;
    rargs[na++] = "--pool";
    rargs[na++] = cfg->pool;
    if (cfg->db_url) {
        rargs[na++] = "--db";
        rargs[na++] = s->db.url_clean;
    }
    if (cfg->no_deps)
        rargs[na++] = "--no-deps";
    if (cfg->ratio_given) {
        rargs[na++] = "--cpu-ratio";
        rargs[na++] = s->ratiobuf;
    }
    rargs[na] = NULL;
    struct run_remote_config *rcfg = calloc(s->nchildren, sizeof *rcfg);
    if (!rcfg)
        return -1;
    int rc = run_session_start_remote_all(s, rcfg, rargs);
    free(rcfg);
    return rc;
}

/* One local replayer, listening on listen; then reachable on loopback. */
static int run_session_spawn_local(struct run_session *s, struct run_child *ch, const char *listen)
{
    const struct run_config *cfg = s->cfg;
    char err[1024];
    char *cargv[24];
    int n = 0;
    cargv[n++] = "preplay";
    cargv[n++] = "replay";
    cargv[n++] = (char *)cfg->plan_path;
    cargv[n++] = "--component";
    cargv[n++] = (char *)ch->name;
    cargv[n++] = "--listen";
    cargv[n++] = (char *)listen;
    const char *secrets[2] = {s->tokbuf, s->db.password};
    int nsecrets = 1;
    cargv[n++] = "--token-file";
    cargv[n++] = "/dev/fd/3";
    cargv[n++] = "--peers";
    cargv[n++] = s->peers;
    cargv[n++] = "--dir";
    cargv[n++] = (char *)s->dir;
    cargv[n++] = "--cpu-ratio";
    cargv[n++] = s->ratiobuf;
    cargv[n++] = "--pool";
    cargv[n++] = (char *)cfg->pool;
    if (cfg->db_url) {
        cargv[n++] = "--db";
        cargv[n++] = s->db.url_clean;
        if (s->db.password[0]) {
            cargv[n++] = "--db-password-file";
            cargv[n++] = "/dev/fd/4";
            nsecrets = 2;
        }
    }
    if (cfg->no_deps)
        cargv[n++] = "--no-deps";
    cargv[n] = NULL;
    if (run_spawn(ch, cargv, secrets, nsecrets, 60, err, sizeof err)) {
        fprintf(stderr, "run: %s\n", err);
        return -1;
    }
    /* bound to every address: reach it on loopback from here */
    const char *port = strrchr(ch->addr, ':');
    if (port && strcmp(listen, "127.0.0.1:0")) {
        char here[128];
        snprintf(here, sizeof here, "%s%s", listen[0] == '[' ? "[::1]" : "127.0.0.1", port);
        snprintf(ch->addr, sizeof ch->addr, "%s", here);
    }
    return 0;
}

/* The local replayers: on loopback, or on every address when hosts
 * elsewhere must reach them (remote ones start first to tell). */
static int run_session_start_local(struct run_session *s)
{
    const char *local_listen = "127.0.0.1:0";
    for (uint32_t i = 0; i < s->nchildren; i++)
        if (s->children[i].remote)
            local_listen =
                strchr(run_remote_client_ip(s->children[i].remote), ':') ? "[::]:0" : "0.0.0.0:0";
    for (uint32_t i = 0; i < s->nchildren && !run_interrupted; i++)
        if (!s->children[i].host && run_session_spawn_local(s, &s->children[i], local_listen))
            return -1;
    if (run_interrupted) {
        fprintf(stderr, "run: interrupted while starting the replayers\n");
        return -1;
    }
    return 0;
}

/* The local peers file: every replayer by the address we reach it at. */
static int run_session_write_peers(struct run_session *s)
{
    char err[1024];
    struct out_file o; /* never through a planted link (out_file.h) */
    FILE *f = NULL;
    if (out_file_begin(&o, s->peers, 0644, err, sizeof err) ||
        !(f = out_file_stream(&o, err, sizeof err))) {
        if (!f && o.dirfd >= 0)
            out_file_abort(&o);
        fprintf(stderr, "run: %s\n", err);
        return -1;
    }
    for (uint32_t i = 0; i < s->nchildren; i++)
        fprintf(f, "%s %s\n", s->children[i].name, s->children[i].addr);
    if (out_file_commit(&o, err, sizeof err)) {
        fprintf(stderr, "run: %s (the peers file)\n", err);
        return -1;
    }
    return 0;
}

/* Each host's peers file: local replayers by the address it reaches us at. */
static int run_session_send_peers(struct run_session *s)
{
    char err[1024];
    for (uint32_t i = 0; i < s->nchildren; i++) {
        struct run_child *ch = &s->children[i];
        if (!ch->remote)
            continue;
        const char *me = run_remote_client_ip(ch->remote);
        size_t cap = 256 * (size_t)s->nchildren + 1, used = 0;
        char *text = malloc(cap);
        if (!text)
            return -1;
        text[0] = 0;
        for (uint32_t j = 0; j < s->nchildren; j++) {
            const struct run_child *o = &s->children[j];
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
            return -1;
        }
    }
    return 0;
}

/* The interval length: --interval, or by default one pass of the
 * recording's schedule at --speed, so that every interval replays the
 * whole recording (a comparable sample of the workload for PT4Cloud). A
 * shorter --interval is said once: each interval then continues the
 * schedule where the last stopped. */
static double run_session_interval(struct run_session *s)
{
    const struct run_config *cfg = s->cfg;
    s->schedule_ns = replay_drive_period_ns(s->p);
    double pass_s = (double)s->schedule_ns / 1e9 / cfg->speed;
    if (!(cfg->interval > 0))
        return pass_s;
    if (cfg->interval < pass_s)
        fprintf(stderr,
                "run: --interval %gs is shorter than one pass of the recording (%.1f s at speed "
                "%g): each interval continues the schedule where the last stopped\n",
                cfg->interval, pass_s, cfg->speed);
    return cfg->interval;
}

int run_session_start(struct run_session *s)
{
    if (run_session_check_plan(s))
        return -1;
    run_session_handlers(s);
    if (run_session_prepare_state(s) || run_session_children_init(s))
        return -1;
    /* replayers: remote ones first, since local ones must know whether to
     * listen beyond loopback and the hosts say where they reach us */
    if ((s->nremote && run_session_start_remote(s)) || run_session_start_local(s) ||
        run_session_write_peers(s) || run_session_send_peers(s))
        return -1;
    struct stats_config cfg;
    char err[1024];
    stats_config_default(&cfg);
    cfg.p0 = s->cfg->p0;
    cfg.interval = run_session_interval(s);
    cfg.max_interval = cfg.interval;
    cfg.kde.log_scale = s->cfg->log_scale;
    s->m = stats_machine_new(&cfg, err);
    if (!s->m) {
        fprintf(stderr, "run: %s\n", err);
        return -1;
    }
    return 0;
}

int run_session_restore(struct run_session *s, long iv, double *files_s, double *db_s, char *err,
                        size_t errlen)
{
    double tr = run_now();
    *files_s = *db_s = 0;
    for (uint32_t i = 0; i < s->nchildren; i++)
        if (s->children[i].remote && run_remote_restore_begin(s->children[i].remote, err, errlen))
            return RUN_REMOTE_FAILED;
    if (s->files) {
        /* sizes here; each replayer rewrites the ranges it wrote at RESET */
        struct dummy_files_stats fst;
        if (dummy_files_restore(s->files, 0, &fst, err, errlen)) {
            fprintf(stderr, "run: interval %ld: restoring dummy files: %s\n", iv, err);
            return -1;
        }
    }
    for (uint32_t i = 0; i < s->nchildren; i++)
        if (s->children[i].remote &&
            run_remote_restore_end(s->children[i].remote, 600, err, errlen))
            return RUN_REMOTE_FAILED;
    *files_s = run_now() - tr;
    if (s->have_db) {
        double t0 = run_now();
        int st = s->db.pg ? run_db_pg_restore(s->db.url_clean, s->db.cnf_path, s->db.dump_path)
                          : run_db_client(&s->db, "mariadb", s->db.dump_path, NULL);
        *db_s = run_now() - t0;
        if (st) {
            fprintf(stderr, "run: interval %ld: reloading the DB snapshot failed (status %d)\n", iv,
                    st);
            return -1;
        }
    }
    return 0;
}

void run_session_print_death(struct run_session *s, const char *prefix, size_t interval)
{
    for (uint32_t i = 0; i < s->nchildren; i++)
        if (s->children[i].exited) {
            struct run_child *ch = &s->children[i];
            char how[400], last[512];
            if (ch->remote)
                run_remote_describe_end(ch->remote, how, sizeof how);
            else
                run_describe_exit(ch, how, sizeof how);
            run_log_last_line(ch->log, last, sizeof last);
            fprintf(stderr,
                    "%srun: the replayer for component '%s'%s%s %s during interval %zu%s%s\n",
                    prefix, ch->name, ch->remote ? " on " : "", ch->remote ? ch->host_text : "",
                    how, interval, last[0] ? ": " : "", last);
            s->dead = ch->name;
            return;
        }
}

/* Every replayer stopped: local ones get SIGTERM (SIGKILL after 1 s),
 * remote ones are stopped over their ssh session. */
static void run_session_stop_children(struct run_session *s)
{
    for (uint32_t i = 0; i < s->nchildren; i++)
        if (s->children[i].pid > 0 && !s->children[i].exited && !s->children[i].remote)
            kill(s->children[i].pid, SIGTERM);
    for (uint32_t i = 0; i < s->nchildren; i++) {
        run_remote_stop(s->children[i].remote);
        s->children[i].remote = NULL;
    }
    for (uint32_t i = 0; i < s->nchildren; i++) {
        struct run_child *ch = &s->children[i];
        if (ch->pid <= 0 || ch->exited || ch->host)
            continue;
        for (int k = 0; k < 50 && waitpid(ch->pid, &ch->status, WNOHANG) == 0; k++)
            usleep(20000);
        if (kill(ch->pid, 0) == 0) {
            kill(ch->pid, SIGKILL);
            waitpid(ch->pid, &ch->status, 0);
        }
    }
}

void run_session_close(struct run_session *s, int rc)
{
    run_session_stop_children(s);
    /* a failed run keeps its directory only for the replayer logs in it:
     * when no replayer had started there are none to point to */
    int logs = 0;
    for (uint32_t i = 0; i < s->nchildren && !logs; i++)
        logs = s->children[i].log[0] && access(s->children[i].log, F_OK) == 0;
    free(s->children);
    run_hosts_free(&s->hosts);
    if (s->db.cnf_path[0]) /* never left behind, also when the logs are */
        unlink(s->db.cnf_path);
    if (s->have_handlers) {
        sigaction(SIGINT, &s->old_int, NULL);
        sigaction(SIGTERM, &s->old_term, NULL);
    }
    if (s->have_work && (rc == 0 || !logs)) {
        char *rm[] = {"rm", "-rf", s->work, NULL};
        run_exec(rm, NULL, NULL, NULL, NULL);
    } else if (s->have_work) {
        fprintf(stderr, "run: replayer logs kept in %s\n", s->work);
    }
    json_decref(s->intervals);
    json_decref(s->samples);
    json_decref(s->resources);
    json_decref(s->db_errors);
    json_decref(s->restores);
    replay_label_set_free(&s->all);
    run_failures_free(&s->failures);
    stats_machine_free(s->m);
    dummy_files_close(s->files);
    plan_free(s->p);
    memset(s, 0, sizeof *s);
}

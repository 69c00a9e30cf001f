/* run_remote.c - replayers on other hosts for `preplay run --hosts FILE`
 * (controller side), and `preplay remote-agent DIR`, its counterpart that
 * runs on the host. See run_remote.h for the design, docs/preplay-run.md
 * for the user's view.
 *
 * Session protocol on the ssh channel, one line per message (payloads
 * follow their line as exactly N raw bytes):
 *   agent -> controller  `agent CLIENT_IP SERVER_IP` once at start
 *   controller -> agent  `token HEX`, `dbpassword X` (when --db has one),
 *                        `arg X` (repeated), `plan N` + N bytes,
 *                        `start COMPONENT LISTEN|-`, `peers N` + N bytes,
 *                        `restore`, `stop`
 *   agent -> controller  `listening ADDR`, `ok`, `restored SECONDS`,
 *                        `stopped`, `error REASON`, and at any time
 *                        `died HOW` when the replayer ended on its own.
 * End of input on the agent's stdin (controller gone, ssh killed) is a
 * `stop`. Must never: delete anything but its own /tmp/preplay-remote.*
 * dir, write the token or the DB password to a file or a command line
 * (the replayer child gets the password in its own PREPLAY_DB_PASSWORD,
 * set after fork, which /proc/PID/environ does not show), block without a
 * deadline. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "replayer_cli.h"
#include "dummy_files.h"
#include "out_file.h"
#include "plan.h"
#include "replay_proto.h"
#include "run_remote.h"

#define RUN_REMOTE_DIR_PREFIX "/tmp/preplay-remote."
#define RUN_REMOTE_MAX_ARGS 32
#define RUN_REMOTE_MAX_PAYLOAD (1u << 30)

static double run_remote_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a line reader with deadlines, used on both ends ---- */

struct run_remote_reader {
    int fd;
    size_t len;
    char buf[65536];
};

/* Waits until rd->fd is readable or the deadline passes, in slices of at
 * most 200 ms. 1 = readable (or interrupted: read and retry), -1 = deadline
 * passed (errno ETIMEDOUT) or poll failed. */
static int run_remote_wait_readable(const struct run_remote_reader *rd, double deadline)
{
    for (;;) {
        double left = deadline - run_remote_now();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {rd->fd, POLLIN, 0};
        int pr = poll(&p, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
        if (pr < 0 && errno != EINTR)
            return -1;
        if (pr != 0)
            return 1;
    }
}

/* 1 = a line in out (without '\n'), 0 = end of input, -1 = deadline or
 * error (errno ETIMEDOUT when the deadline passed), -2 = line too long. */
static int run_remote_read_line(struct run_remote_reader *rd, double deadline, char *out,
                                size_t outlen)
{
    for (;;) {
        char *nl = memchr(rd->buf, '\n', rd->len);
        if (nl) {
            size_t n = (size_t)(nl - rd->buf);
            if (n >= outlen)
                return -2;
            memcpy(out, rd->buf, n);
            out[n] = 0;
            rd->len -= n + 1;
            memmove(rd->buf, nl + 1, rd->len);
            return 1;
        }
        if (rd->len == sizeof rd->buf)
            return -2;
        if (run_remote_wait_readable(rd, deadline) < 0)
            return -1;
        ssize_t got = read(rd->fd, rd->buf + rd->len, sizeof rd->buf - rd->len);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            return got == 0 ? 0 : -1;
        rd->len += (size_t)got;
    }
}

/* Exactly n bytes into dst (from the buffer first). 0, or -1. */
static int run_remote_read_exact(struct run_remote_reader *rd, void *dst, size_t n, double deadline)
{
    size_t have = rd->len < n ? rd->len : n;
    memcpy(dst, rd->buf, have);
    rd->len -= have;
    memmove(rd->buf, rd->buf + have, rd->len);
    while (have < n) {
        if (run_remote_wait_readable(rd, deadline) < 0)
            return -1;
        ssize_t got = read(rd->fd, (char *)dst + have, n - have);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (got <= 0)
            return -1;
        have += (size_t)got;
    }
    return 0;
}

/* Writes all of buf; send(MSG_NOSIGNAL) on sockets so a dead peer is an
 * error, not a SIGPIPE. */
static int run_remote_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int run_remote_printf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run_remote_printf(int fd, const char *fmt, ...)
{
    char line[4400];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line)
        return -1;
    return run_remote_write_all(fd, line, (size_t)n);
}

/* ---- hosts file ---- */

int run_hosts_read(const char *path, struct run_hosts *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char line[2048];
    unsigned lineno = 0;
    int rc = -1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%u: line too long", path, lineno);
            goto out;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *fields[4], *save = NULL;
        int nf = 0;
        for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
            if (nf == 3) {
                snprintf(err, errlen,
                         "%s:%u: too many fields (expected COMPONENT [user@]host[:port] "
                         "[listen-address])",
                         path, lineno);
                goto out;
            }
            fields[nf++] = t;
        }
        if (!nf)
            continue;
        if (nf < 2) {
            snprintf(err, errlen, "%s:%u: '%s' has no host (expected COMPONENT [user@]host[:port])",
                     path, lineno, fields[0]);
            goto out;
        }
        struct run_host h = {.line = lineno};
        if (strlen(fields[0]) >= sizeof h.component || strlen(fields[1]) >= sizeof h.target ||
            (nf == 3 && strlen(fields[2]) >= sizeof h.listen)) {
            snprintf(err, errlen, "%s:%u: field too long", path, lineno);
            goto out;
        }
        snprintf(h.component, sizeof h.component, "%s", fields[0]);
        /* [user@]host[:port], host may be [v6] */
        const char *t = fields[1];
        const char *at = strrchr(t, '@');
        const char *host = at ? at + 1 : t;
        const char *port = NULL;
        char hostbuf[300];
        if (host[0] == '[') {
            const char *close = strchr(host, ']');
            if (!close || (close[1] && close[1] != ':')) {
                snprintf(err, errlen, "%s:%u: '%s': unterminated [IPv6] host", path, lineno, t);
                goto out;
            }
            snprintf(hostbuf, sizeof hostbuf, "%.*s", (int)(close - host - 1), host + 1);
            port = close[1] ? close + 2 : NULL;
        } else {
            const char *colon = strchr(host, ':');
            if (colon && strchr(colon + 1, ':'))
                colon = NULL; /* bare IPv6 without a port */
            snprintf(hostbuf, sizeof hostbuf, "%.*s",
                     (int)(colon ? (size_t)(colon - host) : strlen(host)), host);
            port = colon ? colon + 1 : NULL;
        }
        if (!hostbuf[0] || t[0] == '-' || (at && at == t)) {
            snprintf(err, errlen, "%s:%u: '%s': expected [user@]host[:port]", path, lineno, t);
            goto out;
        }
        if (port) {
            char *end;
            long pn = strtol(port, &end, 10);
            if (!*port || *end || pn < 1 || pn > 65535) {
                snprintf(err, errlen, "%s:%u: '%s': bad ssh port '%s'", path, lineno, t, port);
                goto out;
            }
            snprintf(h.port, sizeof h.port, "%ld", pn);
        }
        snprintf(h.target, sizeof h.target, "%.*s%s", at ? (int)(at - t + 1) : 0, t, hostbuf);
        if (nf == 3) {
            /* syntax only: a name may resolve only there */
            const char *colon = strrchr(fields[2], ':');
            char *end = NULL;
            long lp = colon ? strtol(colon + 1, &end, 10) : -1;
            if (!colon || colon == fields[2] || !colon[1] || *end || lp < 0 || lp > 65535) {
                snprintf(err, errlen, "%s:%u: listen address '%s': expected HOST:PORT", path,
                         lineno, fields[2]);
                goto out;
            }
            snprintf(h.listen, sizeof h.listen, "%s", fields[2]);
        }
        const struct run_host *dup = run_hosts_find(out, h.component);
        if (dup) {
            snprintf(err, errlen, "%s:%u: component '%s' is already on line %u", path, lineno,
                     h.component, dup->line);
            goto out;
        }
        struct run_host *grown = realloc(out->hosts, (out->n + 1) * sizeof *grown);
        if (!grown) {
            snprintf(err, errlen, "%s: out of memory", path);
            goto out;
        }
        out->hosts = grown;
        out->hosts[out->n++] = h;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error after line %u", path, lineno);
        goto out;
    }
    if (!out->n) {
        snprintf(err, errlen, "%s: no COMPONENT host lines", path);
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    if (rc)
        run_hosts_free(out);
    return rc;
}

void run_hosts_free(struct run_hosts *h)
{
    free(h->hosts);
    h->hosts = NULL;
    h->n = 0;
}

const struct run_host *run_hosts_find(const struct run_hosts *h, const char *component)
{
    for (uint32_t i = 0; i < h->n; i++)
        if (!strcmp(h->hosts[i].component, component))
            return &h->hosts[i];
    return NULL;
}

void run_host_describe(const struct run_host *h, char *out, size_t outlen)
{
    int v6 = strchr(h->target, ':') != NULL;
    const char *at = strrchr(h->target, '@');
    const char *host = at ? at + 1 : h->target;
    if (!h->port[0]) {
        snprintf(out, outlen, "%s", h->target);
        return;
    }
    snprintf(out, outlen, "%.*s%s%s%s:%s", (int)(host - h->target), h->target, v6 ? "[" : "", host,
             v6 ? "]" : "", h->port);
}

/* ---- controller side ---- */

struct run_remote {
    char host[340]; /* as described to the user */
    char log[4200];
    char dir[256];
    char client_ip[64], server_ip[64];
    pid_t pid; /* the ssh running the agent */
    int in;    /* agent's stdin (socket) */
    struct run_remote_reader out;
    int exited, status;
    char died[256]; /* the agent's `died` message, if any */
    pid_t copy_pid; /* the ssh copying preplay there, until its answer is read */
    int copy_fd;    /* its stdout */
    double copy_deadline;
    int agent_seen;               /* the agent answered: its shell removes dir in any case */
    struct run_remote_config cfg; /* host and ssh options, for the cleanup */
};

void run_log_last_line(const char *path, char *out, size_t outlen)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0])
            snprintf(out, outlen, "%s", line);
    }
    fclose(f);
}

/* ssh OPTS... [-p PORT] TARGET COMMAND, stdin/stdout/stderr as given. */
static pid_t run_remote_ssh(const struct run_remote_config *cfg, const char *command, int in_fd,
                            int out_fd, const char *log_path, char *err, size_t errlen)
{
    char *opts = cfg->ssh_opts ? strdup(cfg->ssh_opts) : NULL;
    char *argv[96], timeout[64];
    int n = 0;
    argv[n++] = "ssh";
    char *save = NULL;
    /* the user's options first: for ssh the first value of an option wins */
    for (char *t = opts ? strtok_r(opts, " \t\n", &save) : NULL; t && n < 80;
         t = strtok_r(NULL, " \t\n", &save))
        argv[n++] = t;
    snprintf(timeout, sizeof timeout, "ConnectTimeout=%d", cfg->connect_timeout_s);
    char *fixed[] = {"-T",
                     "-o",
                     "BatchMode=yes",
                     "-o",
                     timeout,
                     "-o",
                     "ServerAliveInterval=5",
                     "-o",
                     "ServerAliveCountMax=3",
                     "-o",
                     "LogLevel=ERROR"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        argv[n++] = fixed[i];
    if (cfg->host->port[0]) {
        argv[n++] = "-p";
        argv[n++] = (char *)cfg->host->port;
    }
    argv[n++] = (char *)cfg->host->target;
    argv[n++] = (char *)command;
    argv[n] = NULL;
    /* never through a planted link (out_file.h) */
    int logfd = out_file_open(log_path, O_WRONLY | O_APPEND, 0600, err, errlen);
    if (logfd < 0) {
        free(opts);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
    } else if (pid == 0) {
        /* own process group: a Ctrl-C on the terminal goes to the
         * controller, which stops the remote side in order */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(logfd, 2) < 0)
            _exit(126);
        execvp("ssh", argv);
        dprintf(2, "run: cannot execute ssh: %s\n", strerror(errno));
        _exit(127);
    }
    close(logfd);
    free(opts);
    return pid;
}

/* waitpid with a deadline; kills the process when it passes. */
static int run_remote_wait(pid_t pid, double deadline, int *status)
{
    for (;;) {
        pid_t w = waitpid(pid, status, WNOHANG);
        if (w == pid)
            return 0;
        if (w < 0 && errno != EINTR)
            return -1;
        if (run_remote_now() >= deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        usleep(10000);
    }
}

/* What went wrong, from ssh's exit status and the log's last line. */
static void run_remote_failure(const struct run_remote *r, const char *what, int status, char *err,
                               size_t errlen)
{
    char last[512];
    run_log_last_line(r->log, last, sizeof last);
    if (!last[0] && WIFEXITED(status) && WEXITSTATUS(status) == 255)
        snprintf(last, sizeof last, "ssh failed (status 255)");
    else if (!last[0] && WIFSIGNALED(status))
        snprintf(last, sizeof last, "ssh killed by signal %d", WTERMSIG(status));
    else if (!last[0])
        snprintf(last, sizeof last, "status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (what)
        snprintf(err, errlen, "host %s: %s: %s", r->host, what, last);
    else /* ssh's own words: "ssh: connect to host ...", "root@h: Permission denied..." */
        snprintf(err, errlen, "host %s: %s%s", r->host, strncmp(last, "ssh: ", 5) ? "ssh: " : "",
                 last);
}

/* Removes r->dir there with one more ssh (for when no agent ran to do it). */
static void run_remote_remove_dir(struct run_remote *r)
{
    char rm[600], err[256];
    int status;
    snprintf(rm, sizeof rm, "rm -rf '%s'", r->dir);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    pid_t rp = run_remote_ssh(&r->cfg, rm, devnull, devnull, r->log, err, sizeof err);
    if (rp > 0)
        run_remote_wait(rp, run_remote_now() + r->cfg.connect_timeout_s + 5, &status);
    if (devnull >= 0)
        close(devnull);
    r->dir[0] = 0;
}

/* A directory name mktemp made there: our prefix and 6+ letters or digits
 * (it goes into commands, so nothing else is accepted). */
static int run_remote_dir_valid(const char *line)
{
    size_t plen = strlen(RUN_REMOTE_DIR_PREFIX), len = strlen(line);
    return !strncmp(line, RUN_REMOTE_DIR_PREFIX, plen) && len >= plen + 6 && len < 200 &&
           strspn(line + plen, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") ==
               len - plen;
}

/* Step 1: a fresh temp dir there with our binary in it. If the session
 * breaks before we have read the dir's name, the shell there removes it
 * (the trap: its `echo` then dies of SIGPIPE). */
static int run_remote_copy_begin(struct run_remote *r, const struct run_remote_config *cfg,
                                 char *err, size_t errlen)
{
    static const char script[] =
        "umask 077; d=$(mktemp -d " RUN_REMOTE_DIR_PREFIX "XXXXXX) || exit 3; "
        "trap 'rm -rf \"$d\"; exit 5' HUP INT PIPE TERM; "
        "if cat >\"$d/preplay\" && chmod 700 \"$d/preplay\"; then echo \"$d\"; "
        "else rm -rf \"$d\"; exit 4; fi";
    int exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (exe < 0) {
        snprintf(err, errlen, "/proc/self/exe: %s", strerror(errno));
        return -1;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        close(exe);
        return -1;
    }
    pid_t pid = run_remote_ssh(cfg, script, exe, pfd[1], r->log, err, errlen);
    close(exe);
    close(pfd[1]);
    if (pid < 0) {
        close(pfd[0]);
        return -1;
    }
    r->copy_pid = pid;
    r->copy_fd = pfd[0];
    /* connecting, authenticating and copying a few MB */
    r->copy_deadline = run_remote_now() + cfg->connect_timeout_s + 120;
    return 0;
}

/* The copy's answer: the dir's name. Lines a login script prints before
 * ours are skipped. */
static int run_remote_copy_end(struct run_remote *r, char *err, size_t errlen)
{
    struct run_remote_reader rd = {.fd = r->copy_fd};
    char line[512] = "";
    pid_t pid = r->copy_pid;
    double deadline = r->copy_deadline;
    int got, read_errno = 0, dir_ok = 0;
    while ((got = run_remote_read_line(&rd, deadline, line, sizeof line)) == 1 &&
           !(dir_ok = run_remote_dir_valid(line)))
        ;
    if (got < 0)
        read_errno = errno;
    close(r->copy_fd);
    r->copy_fd = -1;
    int status = 0;
    int waited = run_remote_wait(pid, got == 1 ? deadline + 5 : run_remote_now() + 5, &status);
    r->copy_pid = 0;
    if (!dir_ok || waited || !WIFEXITED(status) || WEXITSTATUS(status)) {
        if (dir_ok) {
            /* copied, but ssh did not end well: do not leave the dir */
            snprintf(r->dir, sizeof r->dir, "%s", line);
            run_remote_remove_dir(r);
        }
        if (got < 0 && read_errno == ETIMEDOUT)
            snprintf(err, errlen, "host %s: copying preplay there timed out", r->host);
        else if (WIFEXITED(status) && (WEXITSTATUS(status) == 3 || WEXITSTATUS(status) == 4))
            run_remote_failure(r, "cannot create a temp dir or copy preplay there", status, err,
                               errlen);
        else if (WIFEXITED(status) && !WEXITSTATUS(status))
            snprintf(err, errlen, "host %s: unexpected answer to the copy: '%.200s'", r->host,
                     line);
        else
            run_remote_failure(r, NULL, status, err, errlen);
        return -1;
    }
    snprintf(r->dir, sizeof r->dir, "%s", line);
    return 0;
}

/* Reads the next reply line; `died` lines are remembered and fail the call. */
static int run_remote_reply(struct run_remote *r, double timeout_s, char *line, size_t linelen,
                            const char *waiting_for, char *err, size_t errlen)
{
    int got = run_remote_read_line(&r->out, run_remote_now() + timeout_s, line, linelen);
    if (got == 1 && !strncmp(line, "died ", 5)) {
        snprintf(r->died, sizeof r->died, "%s", line + 5);
        got = 0; /* the agent ends the session after this: treat as its end */
    }
    if (got == 1 && strncmp(line, "error ", 6))
        return 0;
    if (got == 1 && !strncmp(line, "error ", 6)) {
        snprintf(err, errlen, "host %s: %s", r->host, line + 6);
    } else if (got < 0 && errno == ETIMEDOUT) {
        snprintf(err, errlen, "host %s: no answer while %s in %.0f s", r->host, waiting_for,
                 timeout_s);
    } else {
        /* the session ended: say why */
        int status = 0;
        if (!r->exited && run_remote_wait(r->pid, run_remote_now() + 5, &status) == 0) {
            r->exited = 1;
            r->status = status;
        }
        char how[400];
        run_remote_describe_end(r, how, sizeof how);
        char last[512];
        run_log_last_line(r->log, last, sizeof last);
        snprintf(err, errlen, "host %s: the remote replayer %s while %s%s%s", r->host, how,
                 waiting_for, last[0] ? ": " : "", last);
    }
    return -1;
}

struct run_remote *run_remote_begin(const struct run_remote_config *cfg, char *err, size_t errlen)
{
    struct run_remote *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->pid = -1;
    r->in = r->out.fd = r->copy_fd = -1;
    r->cfg = *cfg;
    r->cfg.replay_args = NULL; /* only needed while starting */
    run_host_describe(cfg->host, r->host, sizeof r->host);
    snprintf(r->log, sizeof r->log, "%s", cfg->log_path);
    if (run_remote_copy_begin(r, cfg, err, errlen)) {
        free(r);
        return NULL;
    }
    return r;
}

int run_remote_start(struct run_remote *r, const struct run_remote_config *cfg, char *err,
                     size_t errlen)
{
    int sv[2] = {-1, -1}, pfd[2] = {-1, -1};
    unsigned char *plan = NULL;
    if (run_remote_copy_end(r, err, errlen))
        goto fail;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || pipe2(pfd, O_CLOEXEC)) {
        snprintf(err, errlen, "socketpair/pipe: %s", strerror(errno));
        goto fail;
    }
    /* the agent; the shell removes the dir whatever happens to the agent */
    char command[1024];
    snprintf(command, sizeof command,
             "'%s/preplay' remote-agent '%s'; rc=$?; rm -rf '%s'; exit $rc", r->dir, r->dir,
             r->dir);
    r->pid = run_remote_ssh(cfg, command, sv[1], pfd[1], r->log, err, errlen);
    close(sv[1]);
    close(pfd[1]);
    sv[1] = pfd[1] = -1;
    if (r->pid < 0)
        goto fail;
    r->in = sv[0];
    r->out.fd = pfd[0];
    sv[0] = pfd[0] = -1;
    struct timeval tv = {60, 0}; /* a stuck agent must not hang our writes */
    setsockopt(r->in, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char line[512];
    if (run_remote_reply(r, cfg->connect_timeout_s + 30, line, sizeof line, "starting the agent",
                         err, errlen)) {
        /* copied but not runnable: noexec /tmp, missing libraries... */
        char last[512];
        run_log_last_line(r->log, last, sizeof last);
        if (r->exited && !r->died[0] && WIFEXITED(r->status) && WEXITSTATUS(r->status) != 255)
            snprintf(err, errlen, "host %s: the copied preplay does not run there: %s", r->host,
                     last[0] ? last : "no answer");
        goto fail;
    }
    for (int noise = 0; strncmp(line, "agent ", 6) && noise < 100; noise++)
        if (run_remote_reply(r, cfg->connect_timeout_s + 30, line, sizeof line,
                             "starting the agent", err, errlen))
            goto fail;
    r->agent_seen = 1;
    if (sscanf(line, "agent %63s %63s", r->client_ip, r->server_ip) != 2) {
        snprintf(err, errlen, "host %s: the copied preplay does not run there: '%.200s'", r->host,
                 line);
        goto fail;
    }
    /* token, arguments, plan: all on the channel, never on a command line */
    char tok[17];
    replay_token_format(cfg->token, tok);
    int bad = run_remote_printf(r->in, "token %s\n", tok);
    if (!bad && cfg->db_password && cfg->db_password[0]) {
        if (strchr(cfg->db_password, '\n')) {
            snprintf(err, errlen, "DB password with a newline");
            goto fail;
        }
        bad = run_remote_printf(r->in, "dbpassword %s\n", cfg->db_password);
    }
    for (int i = 0; !bad && cfg->replay_args && cfg->replay_args[i]; i++) {
        if (strchr(cfg->replay_args[i], '\n')) {
            snprintf(err, errlen, "replayer argument with a newline");
            goto fail;
        }
        bad = run_remote_printf(r->in, "arg %s\n", cfg->replay_args[i]);
    }
    FILE *pf = fopen(cfg->plan_path, "rb");
    if (!pf) {
        snprintf(err, errlen, "%s: %s", cfg->plan_path, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(fileno(pf), &st) || st.st_size <= 0 ||
        (uint64_t)st.st_size > RUN_REMOTE_MAX_PAYLOAD || !(plan = malloc((size_t)st.st_size)) ||
        fread(plan, 1, (size_t)st.st_size, pf) != (size_t)st.st_size) {
        snprintf(err, errlen, "%s: cannot read the plan", cfg->plan_path);
        fclose(pf);
        goto fail;
    }
    fclose(pf);
    bad = bad || run_remote_printf(r->in, "plan %lld\n", (long long)st.st_size) ||
          run_remote_write_all(r->in, plan, (size_t)st.st_size) ||
          run_remote_printf(r->in, "start %s %s\n", cfg->host->component,
                            cfg->host->listen[0] ? cfg->host->listen : "-");
    free(plan);
    plan = NULL;
    if (bad) {
        run_remote_reply(r, 5, line, sizeof line, "sending the plan", err, errlen);
        goto fail;
    }
    return 0;
fail:
    free(plan);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (pfd[0] >= 0)
        close(pfd[0]);
    if (pfd[1] >= 0)
        close(pfd[1]);
    return -1;
}

int run_remote_wait_listening(struct run_remote *r, double timeout_s, char *addr, size_t addrlen,
                              char *err, size_t errlen)
{
    char line[512];
    if (run_remote_reply(r, timeout_s, line, sizeof line, "starting the replayer", err, errlen)) {
        char last[512];
        run_log_last_line(r->log, last, sizeof last);
        size_t used = strlen(err);
        if (last[0] && !strstr(err, last) && used + 3 < errlen)
            snprintf(err + used, errlen - used, ": %s", last);
        return -1;
    }
    if (strncmp(line, "listening ", 10)) {
        snprintf(err, errlen, "host %s: unexpected answer '%.200s'", r->host, line);
        return -1;
    }
    snprintf(addr, addrlen, "%s", line + 10);
    return 0;
}

const char *run_remote_client_ip(const struct run_remote *r)
{
    return r->client_ip;
}
const char *run_remote_dir(const struct run_remote *r)
{
    return r->dir;
}
pid_t run_remote_ssh_pid(const struct run_remote *r)
{
    return r->pid;
}

int run_remote_send_peers(struct run_remote *r, const char *text, char *err, size_t errlen)
{
    size_t n = strlen(text);
    char line[512];
    if (run_remote_printf(r->in, "peers %zu\n", n) || run_remote_write_all(r->in, text, n)) {
        run_remote_reply(r, 5, line, sizeof line, "sending the peers file", err, errlen);
        return -1;
    }
    if (run_remote_reply(r, 30, line, sizeof line, "writing the peers file", err, errlen))
        return -1;
    if (strcmp(line, "ok")) {
        snprintf(err, errlen, "host %s: unexpected answer '%.200s'", r->host, line);
        return -1;
    }
    return 0;
}

int run_remote_restore_begin(struct run_remote *r, char *err, size_t errlen)
{
    char line[512];
    if (run_remote_printf(r->in, "restore\n")) {
        run_remote_reply(r, 5, line, sizeof line, "restoring its files", err, errlen);
        return -1;
    }
    return 0;
}

int run_remote_restore_end(struct run_remote *r, double timeout_s, char *err, size_t errlen)
{
    char line[512];
    if (run_remote_reply(r, timeout_s, line, sizeof line, "restoring its files", err, errlen))
        return -1;
    if (strncmp(line, "restored", 8)) {
        snprintf(err, errlen, "host %s: unexpected answer '%.200s'", r->host, line);
        return -1;
    }
    return 0;
}

int run_remote_exited(struct run_remote *r, int *status)
{
    if (!r->exited && r->pid > 0 && waitpid(r->pid, &r->status, WNOHANG) == r->pid)
        r->exited = 1;
    if (r->exited && status)
        *status = r->status;
    return r->exited;
}

void run_remote_describe_end(struct run_remote *r, char *out, size_t outlen)
{
    if (!r->died[0] && r->out.fd >= 0) {
        /* the agent says `died HOW` before it exits: pick it up */
        char line[512];
        while (run_remote_read_line(&r->out, run_remote_now() + 0.2, line, sizeof line) == 1)
            if (!strncmp(line, "died ", 5)) {
                snprintf(r->died, sizeof r->died, "%s", line + 5);
                break;
            }
    }
    if (r->died[0])
        snprintf(out, outlen, "%s", r->died);
    else if (r->exited && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 255)
        snprintf(out, outlen, "lost its ssh connection");
    else if (r->exited && WIFSIGNALED(r->status))
        snprintf(out, outlen, "ended (ssh killed by signal %d)", WTERMSIG(r->status));
    else if (r->exited)
        snprintf(out, outlen, "ended (ssh status %d)", WEXITSTATUS(r->status));
    else
        snprintf(out, outlen, "stopped answering");
}

void run_remote_stop(struct run_remote *r)
{
    if (!r)
        return;
    if (r->copy_pid > 0) {
        /* still copying: let it finish (bounded), then remove what it made;
         * killing it could lose the dir's name in flight */
        char err[512];
        if (run_remote_copy_end(r, err, sizeof err) == 0)
            run_remote_remove_dir(r);
    } else if (r->dir[0] && !r->agent_seen) {
        /* copied, but no agent ran (its session failed): nobody else will */
        run_remote_remove_dir(r);
    }
    if (r->copy_fd >= 0)
        close(r->copy_fd);
    if (r->pid > 0 && !r->exited) {
        /* ask politely; end of input is the same to the agent */
        if (r->in >= 0)
            run_remote_printf(r->in, "stop\n");
        if (r->in >= 0)
            shutdown(r->in, SHUT_WR);
        if (run_remote_wait(r->pid, run_remote_now() + 10, &r->status) == 0)
            r->exited = 1;
    }
    if (r->in >= 0)
        close(r->in);
    if (r->out.fd >= 0)
        close(r->out.fd);
    free(r);
}

/* ---- the agent, on the remote host ---- */

struct run_agent {
    const char *dir;
    char token[17];
    char db_password[256];
    char *args[RUN_REMOTE_MAX_ARGS];
    int nargs;
    char plan_path[300], peers_path[300], files_dir[300];
    struct plan *plan;
    struct dummy_files *files;
    pid_t replayer;
    int replayer_out;
};

static void run_agent_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void run_agent_say(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof line)
        n = sizeof line - 1;
    for (int i = 0; i < n - 1; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    run_remote_write_all(1, line, (size_t)n);
}

static int run_agent_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static int run_agent_write_file(const char *path, struct run_remote_reader *in, size_t n)
{
    char *buf = malloc(n ? n : 1);
    char err[1024];
    struct out_file o; /* never through a planted link (out_file.h) */
    int rc = -1;
    /* 5 min plus 1 s per MB: a big plan over a slow link */
    if (!buf || run_remote_read_exact(in, buf, n, run_remote_now() + 300 + (double)n / 1e6) ||
        out_file_begin(&o, path, 0600, err, sizeof err))
        goto out;
    if (run_remote_write_all(o.fd, buf, n))
        out_file_abort(&o);
    else
        rc = out_file_commit(&o, err, sizeof err);
out:
    free(buf);
    return rc;
}

static void run_agent_describe_status(int status, char *out, size_t outlen)
{
    if (WIFSIGNALED(status))
        snprintf(out, outlen, "killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, outlen, "exited with status %d", WEXITSTATUS(status));
}

/* Forks the replayer (cmd_replay in a child, so the token stays in memory:
 * /proc/PID/cmdline shows the agent's own command line). */
static int run_agent_start(struct run_agent *a, const char *component, const char *listen_addr)
{
    char err[512];
    if (!a->plan) {
        a->plan = plan_read(a->plan_path, err, sizeof err);
        if (!a->plan) {
            run_agent_say("error %s\n", err);
            return -1;
        }
    }
    if (a->plan->nfiles && !a->files) {
        struct dummy_files_stats fst;
        a->files = dummy_files_open_plan(a->files_dir, a->plan, err, sizeof err);
        if (!a->files || dummy_files_check_space(a->files, err, sizeof err) ||
            dummy_files_create(a->files, &fst, err, sizeof err)) {
            run_agent_say("error dummy files: %s\n", err);
            return -1;
        }
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) {
        run_agent_say("error pipe: %s\n", strerror(errno));
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        run_agent_say("error fork: %s\n", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        prctl(PR_SET_NAME, "preplay-replay");
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull < 0 || dup2(devnull, 0) < 0 || dup2(pfd[1], 1) < 0)
            _exit(126);
        char *argv[16 + RUN_REMOTE_MAX_ARGS];
        int n = 0;
        argv[n++] = "replay";
        argv[n++] = a->plan_path;
        argv[n++] = "--component";
        argv[n++] = (char *)component;
        argv[n++] = "--listen";
        argv[n++] = (char *)listen_addr;
        argv[n++] = "--token";
        argv[n++] = a->token;
        argv[n++] = "--peers";
        argv[n++] = a->peers_path;
        argv[n++] = "--dir";
        argv[n++] = a->files_dir;
        for (int i = 0; i < a->nargs; i++)
            argv[n++] = a->args[i];
        argv[n] = NULL;
        if (a->db_password[0] && setenv("PREPLAY_DB_PASSWORD", a->db_password, 1))
            _exit(126);
        int rc = cmd_replay(n, argv);
        fflush(NULL);
        exit(rc);
    }
    close(pfd[1]);
    a->replayer = pid;
    a->replayer_out = pfd[0];
    /* its "listening ADDR" line (after calibration) */
    struct run_remote_reader rd = {.fd = pfd[0]};
    char line[512];
    double deadline = run_remote_now() + 300;
    for (;;) {
        int got = run_remote_read_line(&rd, run_remote_now() + 0.5, line, sizeof line);
        if (got == 1 && !strncmp(line, "listening ", 10)) {
            run_agent_say("%s\n", line);
            return 0;
        }
        int status;
        if (got == 0 || waitpid(pid, &status, WNOHANG) == pid) {
            if (got == 0)
                waitpid(pid, &status, 0);
            char how[64];
            run_agent_describe_status(status, how, sizeof how);
            a->replayer = 0;
            run_agent_say("error the replayer %s before listening\n", how);
            return -1;
        }
        if (run_remote_now() > deadline) {
            run_agent_say("error the replayer did not say 'listening' in 300 s\n");
            return -1;
        }
    }
}

static void run_agent_stop_replayer(struct run_agent *a)
{
    if (a->replayer <= 0)
        return;
    kill(a->replayer, SIGTERM);
    int status;
    if (run_remote_wait(a->replayer, run_remote_now() + 5, &status))
        fprintf(stderr, "remote-agent: the replayer did not stop in 5 s: killed\n");
    a->replayer = 0;
}

int cmd_remote_agent(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--help")) {
        printf("usage: preplay remote-agent DIR\n\n"
               "The remote end of `preplay run --hosts`: started by the controller over ssh in\n"
               "the temp dir DIR (" RUN_REMOTE_DIR_PREFIX "*) it copied preplay to; reads its\n"
               "commands on stdin (docs/preplay-remote-agent.md), removes DIR when done.\n");
        return 0;
    }
    if (argc != 2 || strncmp(argv[1], RUN_REMOTE_DIR_PREFIX, strlen(RUN_REMOTE_DIR_PREFIX)) ||
        strstr(argv[1], "/..") || strlen(argv[1]) > 200) {
        fprintf(stderr, "remote-agent: needs the temp dir " RUN_REMOTE_DIR_PREFIX
                        "* it runs in (started by preplay run --hosts)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct run_agent a = {.dir = argv[1], .replayer_out = -1};
    snprintf(a.plan_path, sizeof a.plan_path, "%s/plan", a.dir);
    snprintf(a.peers_path, sizeof a.peers_path, "%s/peers", a.dir);
    snprintf(a.files_dir, sizeof a.files_dir, "%s/files", a.dir);
    /* SSH_CONNECTION = "client_ip client_port server_ip server_port" */
    char client[64] = "-", server[64] = "-";
    const char *sc = getenv("SSH_CONNECTION");
    if (sc)
        sscanf(sc, "%63s %*s %63s", client, server);
    run_agent_say("agent %s %s\n", client, server);
    struct run_remote_reader in = {.fd = 0};
    char line[1024];
    int rc = 0;
    for (;;) {
        if (a.replayer > 0) {
            int status;
            if (waitpid(a.replayer, &status, WNOHANG) == a.replayer) {
                char how[64];
                run_agent_describe_status(status, how, sizeof how);
                a.replayer = 0;
                run_agent_say("died %s\n", how);
                rc = 3;
                break;
            }
        }
        int got = run_remote_read_line(&in, run_remote_now() + 0.2, line, sizeof line);
        if (got < 0 && errno == ETIMEDOUT)
            continue;
        if (got <= 0 || !strcmp(line, "stop"))
            break;
        unsigned long long n;
        char comp[200], addr[300];
        if (!strncmp(line, "token ", 6)) {
            uint64_t t;
            if (replay_token_parse(line + 6, &t)) {
                run_agent_say("error bad token\n");
                continue;
            }
            snprintf(a.token, sizeof a.token, "%s", line + 6);
        } else if (!strncmp(line, "dbpassword ", 11)) {
            if (strlen(line + 11) >= sizeof a.db_password)
                run_agent_say("error DB password longer than %zu bytes\n",
                              sizeof a.db_password - 1);
            else
                snprintf(a.db_password, sizeof a.db_password, "%s", line + 11);
        } else if (!strncmp(line, "arg ", 4)) {
            if (a.nargs == RUN_REMOTE_MAX_ARGS || !(a.args[a.nargs] = strdup(line + 4)))
                run_agent_say("error too many replayer arguments\n");
            else
                a.nargs++;
        } else if (sscanf(line, "plan %llu", &n) == 1 && n <= RUN_REMOTE_MAX_PAYLOAD) {
            if (run_agent_write_file(a.plan_path, &in, (size_t)n)) {
                run_agent_say("error cannot write the plan to %s: %s\n", a.plan_path,
                              strerror(errno));
                break;
            }
        } else if (sscanf(line, "peers %llu", &n) == 1 && n <= RUN_REMOTE_MAX_PAYLOAD) {
            if (run_agent_write_file(a.peers_path, &in, (size_t)n)) {
                run_agent_say("error cannot write the peers to %s: %s\n", a.peers_path,
                              strerror(errno));
                break;
            }
            run_agent_say("ok\n");
        } else if (sscanf(line, "start %199s %299s", comp, addr) == 2) {
            char listen_addr[320];
            if (!strcmp(addr, "-") && strcmp(server, "-"))
                snprintf(listen_addr, sizeof listen_addr, strchr(server, ':') ? "[%s]:0" : "%s:0",
                         server);
            else
                snprintf(listen_addr, sizeof listen_addr, "%s",
                         strcmp(addr, "-") ? addr : "0.0.0.0:0");
            if (a.replayer > 0 || !a.token[0]) {
                run_agent_say("error start: %s\n", a.token[0] ? "already started" : "no token");
                continue;
            }
            if (run_agent_start(&a, comp, listen_addr)) {
                rc = 1;
                break;
            }
        } else if (!strcmp(line, "restore")) {
            /* sizes only, as `preplay run` does locally: the replayer
             * rewrites the ranges its writes touched at the RESET that
             * follows */
            char err[512];
            struct dummy_files_stats fst = {0};
            double t0 = run_remote_now();
            if (a.files && dummy_files_restore(a.files, 0, &fst, err, sizeof err))
                run_agent_say("error restoring dummy files: %s\n", err);
            else
                run_agent_say("restored %.6f\n", run_remote_now() - t0);
        } else {
            run_agent_say("error unknown command '%.100s'\n", line);
        }
    }
    run_agent_stop_replayer(&a);
    if (a.replayer_out >= 0)
        close(a.replayer_out);
    dummy_files_close(a.files);
    plan_free(a.plan);
    for (int i = 0; i < a.nargs; i++)
        free(a.args[i]);
    nftw(a.dir, run_agent_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (!rc)
        run_agent_say("stopped\n");
    return rc;
}

/* run_remote.h - `preplay run --hosts FILE`: replayers on other hosts over
 * ssh. The hosts file maps plan components to `[user@]host[:port]` (see
 * docs/preplay-run.md); for each remote component the controller copies its
 * own `preplay` binary into a fresh temp dir on the host, starts
 * `preplay remote-agent DIR` there over one ssh session and talks to it on
 * that session's stdin/stdout: the run token (never on a command line), the
 * replayer's arguments, the plan, then `start`, `peers`, `restore`, `stop`.
 * The agent creates the component's dummy files, runs the replayer as its
 * child, restores the files on request, reports the replayer's death, and
 * removes the temp dir when told to stop or when the ssh session goes away.
 * Must never leave a replayer or a temp dir behind on a host, never hang on
 * a password prompt (BatchMode), never put the token where `ps` shows it. */
#ifndef PREPLAY_RUN_REMOTE_H
#define PREPLAY_RUN_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct run_host {
    char component[128];
    char target[300]; /* [user@]host for ssh (IPv6 brackets removed) */
    char port[8];     /* ssh port, "" = ssh's default */
    char listen[300]; /* replayer listen address there, "" = the address ssh reached */
    unsigned line;    /* line in the hosts file */
};

struct run_hosts {
    struct run_host *hosts;
    uint32_t n;
};

/* Reads a hosts file: `COMPONENT [user@]host[:sshport] [listen-address]`
 * per line, `#` comments, blank lines. -1 with "FILE:LINE: reason". */
int run_hosts_read(const char *path, struct run_hosts *out, char *err, size_t errlen);
void run_hosts_free(struct run_hosts *h);
const struct run_host *run_hosts_find(const struct run_hosts *h, const char *component);
/* "user@host:port" as the user wrote it (for messages). */
void run_host_describe(const struct run_host *h, char *out, size_t outlen);

struct run_remote_config {
    const struct run_host *host;
    const char *ssh_opts; /* extra ssh options, split at whitespace; may be NULL */
    int connect_timeout_s;
    const char *plan_path;
    const char *log_path; /* ssh's and the remote replayer's stderr go here */
    uint64_t token;
    const char *db_password;        /* "" or NULL: none (sent like the token) */
    const char *const *replay_args; /* extra `preplay replay` arguments, NULL-terminated */
};

struct run_remote;

/* Starts copying preplay to the host (an ssh in the background, so several
 * hosts copy at once). NULL with a reason if ssh cannot even be started. */
struct run_remote *run_remote_begin(const struct run_remote_config *cfg, char *err, size_t errlen);
/* Waits for the copy, starts the agent, sends token, arguments and plan,
 * and asks it to start the replayer (without waiting for it). -1 with a
 * one-line reason (unreachable, auth failure, binary does not run
 * there...); the caller still owns r and stops it, which leaves nothing on
 * the host. */
int run_remote_start(struct run_remote *r, const struct run_remote_config *cfg, char *err,
                     size_t errlen);
/* Waits for the replayer's "listening ADDR"; 0 with addr, or -1 with err. */
int run_remote_wait_listening(struct run_remote *r, double timeout_s, char *addr, size_t addrlen,
                              char *err, size_t errlen);
/* The controller's address as the host sees it (from SSH_CONNECTION). */
const char *run_remote_client_ip(const struct run_remote *r);
const char *run_remote_dir(const struct run_remote *r);
pid_t run_remote_ssh_pid(const struct run_remote *r);
/* Writes the replayer's peers file there. */
int run_remote_send_peers(struct run_remote *r, const char *text, char *err, size_t errlen);
/* Dummy files back to their initial state: begin on every host, then end
 * on every host (so hosts restore in parallel). */
int run_remote_restore_begin(struct run_remote *r, char *err, size_t errlen);
int run_remote_restore_end(struct run_remote *r, double timeout_s, char *err, size_t errlen);
/* Non-zero once the session ended (replayer died, connection lost); the
 * ssh exit status in *status. Never blocks. */
int run_remote_exited(struct run_remote *r, int *status);
/* How the remote replayer ended ("killed by signal 9", "lost the ssh
 * connection (status 255)") for the death message. */
void run_remote_describe_end(struct run_remote *r, char *out, size_t outlen);
/* Stops the replayer, has the temp dir removed, ends the session (bounded:
 * ssh is killed after a few seconds), and frees r. */
void run_remote_stop(struct run_remote *r);

/* The last non-empty line of a log file (what ssh, the agent or a replayer
 * said last), for one-line errors; "" when there is none. */
void run_log_last_line(const char *path, char *out, size_t outlen);

#endif

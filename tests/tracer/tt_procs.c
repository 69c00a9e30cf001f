/* tt_procs.c - process lifecycle shapes for test_procs.py and
 * test_envclear.py. `tt_procs MODE DIR` starts one or all of: fork, fork +
 * exec, a daemon (double fork, setsid, closing every descriptor 0..1023,
 * then file I/O), posix_spawn, vfork + exec, system(), and clearing the
 * environment before exec/fork. Each process that ends the chain is a
 * "leaf": it writes DIR/leaf-TAG.out with its pid and parent pid (so the
 * test can tell which trace is whose) with a plain open/write/close the
 * trace must show. It must never depend on the tracer being there: with or
 * without it, it does the same calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *self;
static const char *dir;

static void die(const char *what)
{
    fprintf(stderr, "tt_procs: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* The last process of a chain: records who it is in a file. */
static int leaf(const char *tag)
{
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/leaf-%s.out", dir, tag);
    int n = snprintf(line, sizeof line, "%d %d %s\n", (int)getpid(), (int)getppid(), tag);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    if (write(fd, line, (size_t)n) != n)
        return 1;
    if (close(fd) != 0)
        return 1;
    /* the environment the leaf got, one variable a line (test_envclear) */
    snprintf(path, sizeof path, "%s/env-%s.out", dir, tag);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 1;
    for (char **e = environ; e && *e; e++)
        if (write(fd, *e, strlen(*e)) < 0 || write(fd, "\n", 1) != 1)
            return 1;
    close(fd);
    return 0;
}

static void wait_ok(pid_t pid, const char *what)
{
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "tt_procs: %s failed (status %d)\n", what, status);
        exit(1);
    }
}

static void exec_leaf(const char *tag, char *const envp[])
{
    char *args[] = {(char *)self, "leaf", (char *)dir, (char *)tag, NULL};
    execve(self, args, envp);
    _exit(127);
}

static void do_fork(void)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0)
        _exit(leaf("fork"));
    wait_ok(pid, "fork child");
}

static void do_exec(void)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0)
        exec_leaf("exec", environ);
    wait_ok(pid, "exec child");
}

static void do_daemon(void)
{
    int sync[2];
    if (pipe(sync) != 0)
        die("pipe");
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        if (setsid() < 0)
            _exit(2);
        pid_t gc = fork();
        if (gc < 0)
            _exit(3);
        if (gc > 0) {
            /* stay until the daemon has read its parent pid, then go */
            char c;
            _exit(read(sync[0], &c, 1) == 1 ? 0 : 4);
        }
        char tag[32];
        snprintf(tag, sizeof tag, "daemon-%d", (int)getppid());
        if (write(sync[1], "x", 1) != 1)
            _exit(5);
        for (int fd = 0; fd < 1024; fd++)
            close(fd);
        if (chdir("/") != 0)
            _exit(6);
        umask(0);
        _exit(leaf(tag));
    }
    wait_ok(pid, "daemon's first child");
    /* the daemon is not our child: wait for its file (bounded) */
    char path[4096];
    for (int i = 0; i < 1000; i++) {
        snprintf(path, sizeof path, "%s/leaf-daemon-%d.out", dir, (int)pid);
        struct stat st;
        if (stat(path, &st) == 0 && st.st_size > 0)
            return;
        usleep(10000);
    }
    fprintf(stderr, "tt_procs: the daemon did not write its file\n");
    exit(1);
}

static void do_spawn(void)
{
    pid_t pid;
    char *args[] = {(char *)self, "leaf", (char *)dir, "spawn", NULL};
    int rc = posix_spawn(&pid, self, NULL, NULL, args, environ);
    if (rc != 0) {
        errno = rc;
        die("posix_spawn");
    }
    wait_ok(pid, "posix_spawn child");
}

static void do_vfork(void)
{
    pid_t pid = vfork();
    if (pid < 0)
        die("vfork");
    if (pid == 0)
        exec_leaf("vfork", environ);
    wait_ok(pid, "vfork child");
}

static void do_system(void)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' leaf '%s' system", self, dir);
    int status = system(cmd);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "tt_procs: system() failed (status %d)\n", status);
        exit(1);
    }
}

/* Environment clearing: exec with an empty environment, exec after
 * clearenv(), and fork after clearenv() (no exec: the library is loaded,
 * only the variables are gone). */
static void do_envclear(void)
{
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        char *empty[] = {NULL};
        exec_leaf("execve-empty", empty);
    }
    wait_ok(pid, "execve with an empty environment");
    pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        clearenv();
        char *args[] = {(char *)self, "leaf", (char *)dir, "clearenv-exec", NULL};
        execv(self, args);
        _exit(127);
    }
    wait_ok(pid, "exec after clearenv");
    pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        clearenv();
        pid_t gc = fork();
        if (gc < 0)
            _exit(2);
        if (gc == 0)
            _exit(leaf("clearenv-fork"));
        int status;
        _exit(waitpid(gc, &status, 0) == gc && WIFEXITED(status) ? WEXITSTATUS(status) : 3);
    }
    wait_ok(pid, "fork after clearenv");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tt_procs fork|exec|daemon|spawn|vfork|system|envclear|all DIR\n"
                        "       tt_procs leaf DIR TAG\n");
        return 2;
    }
    self = "/proc/self/exe";
    static char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        self = exe;
    }
    dir = argv[2];
    const char *mode = argv[1];
    if (!strcmp(mode, "leaf"))
        return argc == 4 ? leaf(argv[3]) : 2;
    int all = !strcmp(mode, "all");
    if (all || !strcmp(mode, "fork"))
        do_fork();
    if (all || !strcmp(mode, "exec"))
        do_exec();
    if (all || !strcmp(mode, "daemon"))
        do_daemon();
    if (all || !strcmp(mode, "spawn"))
        do_spawn();
    if (all || !strcmp(mode, "vfork"))
        do_vfork();
    if (all || !strcmp(mode, "system"))
        do_system();
    if (!strcmp(mode, "envclear"))
        do_envclear();
    printf("%d\n", (int)getpid());
    return 0;
}

/* tt_openshare.c - deferred OPEN records (tracer_open_settle) when the
 * descriptor does not stay the opener's alone, for test_openshare.py:
 *   reused:  the main thread opens a file; before it makes another traced
 *            call, a second thread closes that descriptor and opens another
 *            file on the same number; main makes a traced call while that
 *            second open still waits for its identity, then the second
 *            thread fstats its file;
 *   dup2:    an open whose descriptor is replaced by dup2 before any other
 *            call;
 *   hidden:  an open whose descriptor is closed by a raw syscall (as
 *            close_range would) before any other traced call;
 *   fork:    an open, then fork; the child closes the descriptor.
 * Waiting between the threads uses raw syscalls only, which the tracer
 * does not see. Prints one JSON line per file with the truth read by path
 * with raw syscalls: device, inode, and the descriptor it was opened on. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tt_untraced_files.h"

static void expect(const char *name, const char *path, int fd)
{
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0)
        tt_die("raw stat");
    printf("{\"case\":\"%s\",\"path\":\"%s\",\"fd\":%d,\"dev\":%llu,\"ino\":%llu}\n", name, path,
           fd, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
    fflush(stdout);
}

static _Atomic int step;
static _Atomic int shared_fd;
static _Atomic int other_fd;
static char path_reused[4096], path_other[4096];

/* Waits for `step` to reach `want` without a call the tracer sees. */
static void wait_step(int want)
{
    while (atomic_load(&step) < want)
        syscall(SYS_sched_yield);
}

static void *second_thread(void *arg)
{
    (void)arg;
    wait_step(1);
    int fd = atomic_load(&shared_fd);
    if (close(fd) != 0)
        tt_die("close in the second thread");
    int fd2 = open(path_other, O_RDONLY); /* its record waits too */
    if (fd2 != fd)
        tt_die("open on the reused descriptor");
    atomic_store(&other_fd, fd2);
    atomic_store(&step, 2);
    wait_step(3);
    struct stat st;
    if (fstat(fd2, &st) != 0)
        tt_die("fstat in the second thread");
    close(fd2);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_openshare DIR\n");
        return 2;
    }
    char p_dup2[4096], p_hidden[4096], p_fork[4096];
    snprintf(path_reused, sizeof path_reused, "%s/reused.dat", argv[1]);
    snprintf(path_other, sizeof path_other, "%s/other.dat", argv[1]);
    snprintf(p_dup2, sizeof p_dup2, "%s/dup2.dat", argv[1]);
    snprintf(p_hidden, sizeof p_hidden, "%s/hidden.dat", argv[1]);
    snprintf(p_fork, sizeof p_fork, "%s/fork.dat", argv[1]);
    tt_make_file(path_reused, 1000, 'q');
    tt_make_file(path_other, 2000, 'q');
    tt_make_file(p_dup2, 3000, 'q');
    tt_make_file(p_hidden, 4000, 'q');
    tt_make_file(p_fork, 5000, 'q');

    /* reused */
    pthread_t thread;
    if (pthread_create(&thread, NULL, second_thread, NULL) != 0)
        tt_die("pthread_create");
    int fd = open(path_reused, O_RDONLY);
    if (fd < 0)
        tt_die("open reused");
    atomic_store(&shared_fd, fd);
    atomic_store(&step, 1);
    wait_step(2);
    expect("reused", path_reused, fd); /* main's first traced call since its open */
    expect("other", path_other, atomic_load(&other_fd));
    atomic_store(&step, 3);
    pthread_join(thread, NULL);

    /* dup2 onto the descriptor before any other call */
    fd = open(p_dup2, O_RDONLY);
    if (fd < 0 || dup2(0, fd) != fd)
        tt_die("open+dup2");
    expect("dup2", p_dup2, fd);
    close(fd);

    /* hidden close */
    fd = open(p_hidden, O_RDONLY);
    if (fd < 0 || syscall(SYS_close, fd) != 0)
        tt_die("open+raw close");
    expect("hidden", p_hidden, fd);

    /* fork right after the open: the child closes the descriptor */
    fd = open(p_fork, O_RDONLY);
    if (fd < 0)
        tt_die("open fork");
    pid_t child = fork();
    if (child < 0)
        tt_die("fork");
    if (child == 0) {
        close(fd);
        _exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child || status != 0)
        tt_die("child");
    expect("fork", p_fork, fd);
    close(fd);
    return 0;
}

/* tt_openexit.c - opens FILE and ends the process before the opening
 * thread makes another traced call, so the tracer's deferred OPEN record
 * (docs/tracer.md, "Opens") is never settled by that thread:
 *   exit    a second thread opens FILE and parks in a raw pause(); the
 *           main thread then calls exit(0)
 *   kill    the same, then the main thread SIGKILLs the process
 *   _exit   the main thread opens FILE and calls _exit(0)
 * test_openexit.py checks that each OPEN reaches the trace. Prints the
 * descriptor it got ("fd N") before ending. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *tt_path;
static _Atomic int tt_opened_fd = -2; /* -2: not yet; -1: the open failed */

static void *tt_opener(void *arg)
{
    (void)arg;
    atomic_store(&tt_opened_fd, open(tt_path, O_RDONLY));
    syscall(SYS_pause); /* untraced: the open stays this thread's last call */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 ||
        (strcmp(argv[1], "exit") && strcmp(argv[1], "kill") && strcmp(argv[1], "_exit"))) {
        fprintf(stderr, "usage: tt_openexit exit|kill|_exit FILE\n");
        return 2;
    }
    tt_path = argv[2];
    char line[32];
    if (!strcmp(argv[1], "_exit")) {
        int fd = open(tt_path, O_RDONLY);
        int n = snprintf(line, sizeof line, "fd %d\n", fd);
        syscall(SYS_write, 1, line, (size_t)n); /* raw: no traced call after the open */
        _exit(fd >= 0 ? 0 : 1);
    }
    pthread_t th;
    if (pthread_create(&th, NULL, tt_opener, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }
    int fd;
    while ((fd = atomic_load(&tt_opened_fd)) == -2)
        sched_yield();
    printf("fd %d\n", fd);
    fflush(stdout);
    if (!strcmp(argv[1], "kill"))
        syscall(SYS_kill, getpid(), SIGKILL);
    exit(fd >= 0 ? 0 : 1);
}

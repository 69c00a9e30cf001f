/* tt_lateexit.c - traced work a thread does after the tracer's hooks for
 * its end were first called (test_lateexit.py checks that the trace has it
 * before the thread's THREAD_EXIT, never after it):
 *   key FILE     a worker sets a thread key the program created after the
 *                tracer's, whose destructor writes 8 bytes to FILE (runs
 *                after the tracer's key destructor in the same round)
 *   rearm FILE   the same destructor re-arms its key in every round, so it
 *                runs in all PTHREAD_DESTRUCTOR_ITERATIONS rounds: its
 *                write in the last one comes after everything we can hook
 *   exit FILE    the main thread writes, then exit(): an atexit handler
 *                and the linked library's destructor (tt_lateexit_lib.c,
 *                run after the tracer's) each write 8 bytes
 * Prints {"main": TID, "worker": TID} (worker 0 in exit mode). Test code:
 * exits non-zero on any failure. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern int tt_lateexit_fd; /* tt_lateexit_lib.c */
static pthread_key_t tt_key;
static int tt_rearm;

static void tt_write(const char *what)
{
    if (write(tt_lateexit_fd, what, 8) != 8)
        _exit(3);
}

static void tt_key_destructor(void *v)
{
    (void)v;
    tt_write("keydtor\n");
    if (tt_rearm && pthread_setspecific(tt_key, (void *)1) != 0)
        _exit(3);
}

static void *tt_worker(void *arg)
{
    tt_write("worker.\n");
    if (pthread_setspecific(tt_key, (void *)1) != 0)
        _exit(3);
    *(long *)arg = syscall(SYS_gettid);
    return NULL;
}

static void tt_atexit(void)
{
    tt_write("atexit.\n");
}

int main(int argc, char **argv)
{
    if (argc != 3 ||
        (strcmp(argv[1], "key") && strcmp(argv[1], "rearm") && strcmp(argv[1], "exit"))) {
        fprintf(stderr, "usage: tt_lateexit key|rearm|exit FILE\n");
        return 2;
    }
    tt_lateexit_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (tt_lateexit_fd < 0) {
        perror(argv[2]);
        return 1;
    }
    long worker = 0;
    if (!strcmp(argv[1], "exit")) {
        if (atexit(tt_atexit) != 0)
            return 1;
        tt_write("main...\n");
    } else {
        tt_rearm = !strcmp(argv[1], "rearm");
        pthread_t th;
        if (pthread_key_create(&tt_key, tt_key_destructor) != 0 ||
            pthread_create(&th, NULL, tt_worker, &worker) != 0 || pthread_join(th, NULL) != 0) {
            fprintf(stderr, "tt_lateexit: pthread failed\n");
            return 1;
        }
        tt_lateexit_fd = -1; /* the library's destructor writes nothing */
    }
    printf("{\"main\": %ld, \"worker\": %ld}\n", (long)syscall(SYS_gettid), worker);
    return 0;
}

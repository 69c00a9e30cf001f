/* tt_sigwrite.c - a signal handler that calls write() while the main
 * thread is inside traced calls (pwrite, pread, mutex lock/unlock, open,
 * close), with SIGUSR1 sent every ~100 us by a second thread for
 * 0.6 s. Prints how many times the handler wrote and how many traced
 * operations the main thread did. test_sigwrite.py checks that nothing
 * crashed or hung and that every handler write is in the trace. The
 * handler must stay async-signal-safe (write and an atomic counter only). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int handler_fd;
static _Atomic long handler_writes;
static _Atomic int stop;
static pthread_t main_thread;

static void on_usr1(int sig)
{
    (void)sig;
    int saved = errno;
    if (write(handler_fd, "h", 1) == 1)
        atomic_fetch_add(&handler_writes, 1);
    errno = saved;
}

static void *signaller(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 100000};
    while (!atomic_load(&stop)) {
        pthread_kill(main_thread, SIGUSR1);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tt_sigwrite DATAFILE HANDLERFILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    handler_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (fd < 0 || handler_fd < 0) {
        perror("open");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    main_thread = pthread_self();
    pthread_t th;
    pthread_create(&th, NULL, signaller, NULL);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    char buf[512];
    memset(buf, 'd', sizeof buf);
    long ops = 0;
    double end = now_s() + 0.6;
    while (now_s() < end) {
        for (int i = 0; i < 50; i++) {
            if (pwrite(fd, buf, sizeof buf, (off_t)(i * 512)) != (ssize_t)sizeof buf)
                return 1;
            if (pread(fd, buf, sizeof buf, (off_t)(i * 512)) != (ssize_t)sizeof buf)
                return 1;
            pthread_mutex_lock(&m);
            pthread_mutex_unlock(&m);
            int t = open(argv[1], O_RDONLY);
            if (t < 0)
                return 1;
            close(t);
            ops += 5;
        }
    }
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    close(handler_fd);
    printf("%ld %ld\n", atomic_load(&handler_writes), ops);
    return 0;
}

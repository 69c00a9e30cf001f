/* tt_cpuping.c - CPU time of a request handler that alternates known CPU
 * work with short blocking round trips, as a PHP worker does with its
 * database: a forked worker (as apache prefork's) makes TRIPS round trips
 * of one byte over loopback TCP to an echo server (another child), then
 * burns WORK iterations, ROUNDS times.
 *   usage: tt_cpuping [ROUNDS TRIPS WORK CPU HOG WAIT NAP]
 * CPU >= 0 pins everything to that CPU, HOG 1 adds a busy child, WAIT 1
 * polls before each read (a wrapped wait: interpose_wait.c), NAP 1 sleeps
 * 1 ms (nanosleep, which the tracer does not wrap) before each burn: a
 * switch between two records in a call the tracer does not see. The
 * worker measures the CPU time from its last round trip to its next (the
 * nap and the burn) with CLOCK_THREAD_CPUTIME_ID and prints "tid cpu_ns"
 * after a last traced call (close); test_cpu_ping.py compares the trace's
 * CPU events of that thread with it. Nothing traced may run inside the
 * measured part, and the echo server must answer every byte (a lost one
 * would hang the run: the test bounds it with a timeout). */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tt_cpu_work.h"

static void tt_echo(int lfd)
{
    int c = accept(lfd, NULL, NULL);
    if (c < 0)
        _exit(1);
    char b;
    while (read(c, &b, 1) == 1)
        if (write(c, &b, 1) != 1)
            _exit(1);
    _exit(0);
}

static int tt_worker(int port, int rounds, int trips, long work, int wait, int nap)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0)
        return 1;
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    unsigned long x = 1;
    unsigned long long cpu = 0;
    char b = 'x';
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < trips; k++) {
            if (write(s, &b, 1) != 1)
                return 1;
            struct pollfd p = {.fd = s, .events = POLLIN};
            if (wait && poll(&p, 1, -1) != 1) /* a wrapped wait: a switch the tracer sees */
                return 1;
            if (read(s, &b, 1) != 1)
                return 1;
        }
        unsigned long long t0 = tt_thread_ns();
        if (nap) { /* untraced: a sleep between records */
            struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
            nanosleep(&ms, NULL);
        }
        x = tt_burn(x, work);
        cpu += tt_thread_ns() - t0;
    }
    close(s); /* a last traced call: the trace covers the last burn */
    printf("%ld %llu\n", (long)syscall(SYS_gettid), cpu);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 400;
    int trips = argc > 2 ? atoi(argv[2]) : 8;
    long work = argc > 3 ? atol(argv[3]) : 100000;
    int cpu = argc > 4 ? atoi(argv[4]) : -1; /* pin everything to this CPU */
    int hog = argc > 5 ? atoi(argv[5]) : 0;  /* a busy child beside them */
    int wait = argc > 6 ? atoi(argv[6]) : 0; /* poll before each read */
    int nap = argc > 7 ? atoi(argv[7]) : 0;  /* sleep 1 ms before each burn */
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            perror("sched_setaffinity");
    }
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &len) != 0)
        return 1;
    pid_t server = fork();
    if (server == 0)
        tt_echo(lfd);
    close(lfd);
    pid_t hogpid = -1;
    if (hog && (hogpid = fork()) == 0)
        for (;;)
            tt_burn(2, 1000000);
    fflush(stdout);
    pid_t worker = fork();
    if (worker == 0)
        _exit(tt_worker(ntohs(a.sin_port), rounds, trips, work, wait, nap));
    int st = 1;
    waitpid(worker, &st, 0);
    if (hogpid > 0)
        kill(hogpid, SIGKILL);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    if (hogpid > 0)
        waitpid(hogpid, NULL, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

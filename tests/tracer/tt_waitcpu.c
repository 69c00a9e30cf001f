/* tt_waitcpu.c - readiness waits that cost real CPU between two traced
 * calls: for each of poll, select and epoll_wait, a traced write, then
 * non-blocking waits until they have used ~40 ms of the thread's CPU
 * (each wait made costly: poll over 4096 entries of an empty pipe, select
 * over ~1000 descriptors of it, epoll_wait returning ~500 ready
 * descriptors of a pipe with data), one blocking wait of 2 ms (a switch),
 * a burn of known work, and a traced write again. Prints the thread's tid
 * and, per kind, "KIND wait_ns burn_ns": its CPU time
 * (CLOCK_THREAD_CPUTIME_ID) in the waits and in the burn. Then a wait a
 * signal interrupts: a traced write, a burn (B1, twice the work), a timer,
 * a blocking poll during which the SIGALRM handler makes a traced write,
 * a burn (B2) and a traced write: "signal b1_ns b2_ns". The handler's
 * record carries B1, so the last one must carry B2 alone.
 * test_wait_cpu.py checks that the CPU events between the two writes hold
 * the burn and not the waits (tracer/preload/interpose_wait.c). Every wait
 * must return what it does untraced; anything else exits 1.
 *   usage: tt_waitcpu OUTFILE [BURN] */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tt_cpu_work.h"

#define TT_POLL_ENTRIES 4096
#define TT_WAIT_CPU_NS 40000000ull
#define TT_WAIT_MAX_CALLS 100000

struct tt_waits {
    struct pollfd many[TT_POLL_ENTRIES]; /* every entry the empty pipe */
    fd_set empty_set;                    /* ~1000 copies of the empty pipe */
    int empty_max, empty_fd;
    int ready_ep, nready; /* epoll over nready copies of a pipe with data */
    int empty_ep;         /* epoll over the empty pipe */
    struct epoll_event evs[1024];
};

enum { TT_POLL, TT_SELECT, TT_EPOLL };

/* One wait: non-blocking (block 0) over the costly set, or 2 ms on the
 * empty pipe; 0 when it returned what it must. */
static int tt_wait(struct tt_waits *w, int kind, int block)
{
    if (kind == TT_POLL)
        return poll(w->many, block ? 1 : TT_POLL_ENTRIES, block ? 2 : 0) != 0;
    if (kind == TT_SELECT) {
        fd_set r = w->empty_set;
        struct timeval tv = {.tv_sec = 0, .tv_usec = block ? 2000 : 0};
        if (block) {
            FD_ZERO(&r);
            FD_SET(w->empty_fd, &r);
        }
        return select(block ? w->empty_fd + 1 : w->empty_max + 1, &r, NULL, NULL, &tv) != 0;
    }
    if (block)
        return epoll_wait(w->empty_ep, w->evs, 1, 2) != 0;
    return epoll_wait(w->ready_ep, w->evs, 1024, 0) != w->nready;
}

static int tt_setup(struct tt_waits *w)
{
    int p[2], q[2];
    if (pipe(p) != 0 || pipe(q) != 0 || write(q[1], "x", 1) != 1)
        return -1;
    w->empty_fd = p[0];
    for (int i = 0; i < TT_POLL_ENTRIES; i++)
        w->many[i] = (struct pollfd){.fd = p[0], .events = POLLIN};
    FD_ZERO(&w->empty_set);
    w->empty_max = p[0];
    FD_SET(p[0], &w->empty_set);
    for (int i = 0; i < 1000; i++) {
        int d = dup(p[0]);
        if (d < 0 || d >= FD_SETSIZE) {
            if (d >= 0)
                close(d);
            break;
        }
        FD_SET(d, &w->empty_set);
        if (d > w->empty_max)
            w->empty_max = d;
    }
    w->ready_ep = epoll_create1(0);
    w->empty_ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.fd = p[0];
    if (w->ready_ep < 0 || w->empty_ep < 0 || epoll_ctl(w->empty_ep, EPOLL_CTL_ADD, p[0], &ev))
        return -1;
    for (w->nready = 0; w->nready < 500; w->nready++) {
        int d = dup(q[0]);
        ev.data.fd = d;
        if (d < 0 || epoll_ctl(w->ready_ep, EPOLL_CTL_ADD, d, &ev) != 0)
            break;
    }
    return w->nready > 0 && w->empty_max > p[0] ? 0 : -1;
}

static int tt_out_fd = -1;

static void tt_on_alarm(int sig)
{
    (void)sig;
    if (write(tt_out_fd, "h", 1) != 1) /* traced, inside the interrupted wait */
        _exit(1);
}

/* The signal case: 0, or 1 when a call did not do what it must. */
static int tt_signal_case(int fd, struct tt_waits *w, long work, unsigned long *x)
{
    struct sigaction sa = {.sa_handler = tt_on_alarm}; /* no SA_RESTART: poll returns EINTR */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0 || write(fd, "a", 1) != 1)
        return 1;
    unsigned long long t0 = tt_thread_ns();
    *x = tt_burn(*x, 2 * work);
    unsigned long long t1 = tt_thread_ns();
    struct itimerval it = {.it_value = {.tv_sec = 0, .tv_usec = 20000}};
    if (setitimer(ITIMER_REAL, &it, NULL) != 0)
        return 1;
    if (poll(w->many, 1, 5000) != -1 || errno != EINTR)
        return 1;
    unsigned long long t2 = tt_thread_ns();
    *x = tt_burn(*x, work);
    unsigned long long t3 = tt_thread_ns();
    if (write(fd, "b", 1) != 1)
        return 1;
    printf("signal %llu %llu\n", t1 - t0, t3 - t2);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long work = argc > 2 ? atol(argv[2]) : 20000000;
    static struct tt_waits w;
    if (tt_setup(&w) != 0)
        return 1;
    FILE *out = fopen(argv[1], "w");
    if (!out)
        return 1;
    int fd = fileno(out);
    tt_out_fd = fd;
    static const char *names[] = {"poll", "select", "epoll"};
    unsigned long x = 1;
    printf("%ld\n", (long)syscall(SYS_gettid));
    for (int kind = TT_POLL; kind <= TT_EPOLL; kind++) {
        if (write(fd, "a", 1) != 1) /* traced: the segment starts here */
            return 1;
        unsigned long long t0 = tt_thread_ns();
        for (long i = 0; i < TT_WAIT_MAX_CALLS; i++) {
            if (tt_wait(&w, kind, 0))
                return 1;
            if (i % 16 == 15 && tt_thread_ns() - t0 >= TT_WAIT_CPU_NS)
                break;
        }
        if (tt_wait(&w, kind, 1)) /* blocks 2 ms: a switch */
            return 1;
        unsigned long long t1 = tt_thread_ns();
        x = tt_burn(x, work);
        unsigned long long t2 = tt_thread_ns();
        if (write(fd, "b", 1) != 1) /* traced: the segment ends here */
            return 1;
        printf("%s %llu %llu\n", names[kind], t1 - t0, t2 - t1);
    }
    if (tt_signal_case(fd, &w, work, &x))
        return 1;
    fclose(out);
    fflush(stdout);
    return x == 42; /* keeps the burn */
}

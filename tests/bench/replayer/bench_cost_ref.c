/* bench_cost_ref.c - the reference of run-replayer-cost: a hand-written
 * server pair doing what make_plan's `lemp` plan records, directly, with
 * no replayer in between: what an efficient application with this
 * recording costs in CPU per request. Speaks the replay wire protocol, so
 * `preplay drive` drives it as it drives the replayers.
 *   bench_cost_ref back ADDR FILE    4 KiB pread at 8 KiB of FILE, 150 us
 *                                    of CPU, the answer; a thread per
 *                                    connection (php-fpm's worker model)
 *   bench_cost_ref front ADDR BACK   30 us of CPU, a call to BACK on a
 *                                    persistent connection (800 bytes out,
 *                                    3000 back), the answer; one thread,
 *                                    an epoll loop (nginx's model)
 *   [unix]                           (front and back) BACK is a Unix
 *                                    socket path: the transport nginx and
 *                                    php-fpm use in tests/common/lemp.sh
 * Prints "listening ADDR" and serves until killed. Bench code: exits with
 * a message on a setup failure. Never checks tokens (a local reference). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cpuburn.h"
#include "replay_proto.h"

#define FRONT_CPU_NS 30000u
#define BACK_CPU_NS 150000u
#define CALL_SEND 800u
#define CALL_RECV 3000u

static struct cpuburn_calibration cal;
static int back_file = -1;

static void die(const char *what)
{
    fprintf(stderr, "bench_cost_ref: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void *back_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    unsigned char hb[REPLAY_HEADER_SIZE];
    static _Thread_local char page[4096];
    struct replay_header h;
    while (!replay_recv_exact(fd, hb, sizeof hb) && !replay_header_decode(hb, &h)) {
        if (replay_recv_discard(fd, h.request_bytes) ||
            pread(back_file, page, sizeof page, 8192) < 0)
            break;
        cpuburn_run(&cal, BACK_CPU_NS);
        if (replay_send_filler(fd, h.response_bytes, 0))
            break;
    }
    close(fd);
    return NULL;
}

static int unix_socket(const char *path, int listen_it)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    if (listen_it) {
        unlink(path);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64))
            die(path);
    } else if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
        die(path);
    }
    return fd;
}

/* One request from the driver on fd: 0, or -1 to close the connection. */
static int front_serve(int fd, int back, const unsigned char call_hb[REPLAY_HEADER_SIZE])
{
    unsigned char hb[REPLAY_HEADER_SIZE];
    struct replay_header h;
    if (replay_recv_exact(fd, hb, sizeof hb) || replay_header_decode(hb, &h) ||
        replay_recv_discard(fd, h.request_bytes))
        return -1;
    cpuburn_run(&cal, FRONT_CPU_NS);
    if (replay_send_head_filler(back, call_hb, REPLAY_HEADER_SIZE, CALL_SEND, 0) ||
        replay_recv_discard(back, CALL_RECV))
        die("the call to back");
    return replay_send_filler(fd, h.response_bytes, 0);
}

static void front_loop(int lfd, int back)
{
    unsigned char call_hb[REPLAY_HEADER_SIZE];
    replay_header_encode(
        &(struct replay_header){.request_bytes = CALL_SEND, .response_bytes = CALL_RECV}, call_hb);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev))
        die("epoll");
    for (;;) {
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, -1);
        if (n < 0 && errno != EINTR)
            die("epoll_wait");
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (fd == lfd) {
                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                struct epoll_event cev = {.events = EPOLLIN, .data.fd = c};
                if (c >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev))
                    close(c);
            } else if (front_serve(fd, back, call_hb)) {
                close(fd);
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "back") && strcmp(argv[1], "front"))) {
        fprintf(stderr, "usage: bench_cost_ref back|front ADDR FILE|BACK [unix]\n");
        return 2;
    }
    int unix_back = argc > 4 && !strcmp(argv[4], "unix"), back = !strcmp(argv[1], "back");
    char err[256];
    if (cpuburn_calibrate(&cal, -1, 0, err, sizeof err)) {
        fprintf(stderr, "bench_cost_ref: %s\n", err);
        return 1;
    }
    int lfd;
    char addr[128];
    if (back && unix_back) {
        lfd = unix_socket(argv[2], 1);
        snprintf(addr, sizeof addr, "%s", argv[2]);
    } else {
        if ((lfd = replay_listen(argv[2], err, sizeof err)) < 0) {
            fprintf(stderr, "bench_cost_ref: %s\n", err);
            return 1;
        }
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        getsockname(lfd, (struct sockaddr *)&ss, &sl);
        replay_addr_format((struct sockaddr *)&ss, addr, sizeof addr);
    }
    if (back && (back_file = open(argv[3], O_RDONLY | O_CLOEXEC)) < 0)
        die(argv[3]);
    printf("listening %s\n", addr);
    fflush(stdout);
    if (!back) {
        int b = unix_back ? unix_socket(argv[3], 0) : replay_connect(argv[3], 1, err, sizeof err);
        if (b < 0) {
            fprintf(stderr, "bench_cost_ref: %s\n", err);
            return 1;
        }
        front_loop(lfd, b);
    }
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        pthread_t th;
        if (c >= 0 && pthread_create(&th, NULL, back_conn, (void *)(intptr_t)c) == 0)
            pthread_detach(th);
        else if (c >= 0)
            close(c);
    }
}

/* tracer_core.c - the life of a traced process in libpreplay_trace.so:
 * registration with the collector (the region of rings it hands back),
 * the library's constructor and destructor, and what a fork child and an
 * exec need. The threads' side is tracer_thread.c, the write path
 * tracer_ring.c, the string table tracer_strings.c.
 *
 * Everything here runs inside an application we must not harm, also in a
 * fork child before it returns to the app: raw syscalls only (never our
 * own wrappers), and every failure degrades to "not traced". */
#include "tracer_core.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "db_wire.h"
#include "fd_table.h"
#include "interpose_stdio.h"
#include "io_events.h"
#include "lock_fold.h"
#include "stacks.h"

/* generation 1 before the first registration: no thread's claimed_gen (0
 * until it claims a ring) matches it */
struct tracer_state tracer_global = {.generation = 1};

static _Atomic int tracer_init_tried; /* tracer_init_once ran (or runs) */

/* ---- registration ------------------------------------------------------ */

/* The collector name and component as first seen at load: an app that
 * clears its environment and then forks (a daemon, nginx's master before
 * its workers) must still register its children with the same collector. */
static char tracer_env_saved[2][256];

static const char *tracer_env(const char *name)
{
    /* getenv is safe in constructors and after fork */
    const char *v = getenv(name);
    int slot = !strcmp(name, "PREPLAY_COLLECTOR") ? 0 : !strcmp(name, "PREPLAY_COMPONENT") ? 1 : -1;
    if (slot < 0)
        return v;
    if (v) {
        if (!tracer_env_saved[slot][0])
            snprintf(tracer_env_saved[slot], sizeof tracer_env_saved[slot], "%s", v);
        return v;
    }
    return tracer_env_saved[slot][0] ? tracer_env_saved[slot] : NULL;
}

int tracer_collector_env_present(void)
{
    return tracer_env("PREPLAY_COLLECTOR") != NULL;
}

static int tracer_read_self(const char *path, char *buf, size_t cap)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = syscall(SYS_read, fd, buf, cap);
    syscall(SYS_close, fd);
    return n < 0 ? -1 : (int)n;
}

/* The registration request: its header, then the executable's path and
 * the command line, packed right after it. */
struct tracer_register_msg {
    struct tracer_register_request req;
    char exe[4096];
    char argv[8192];
};

/* Fills msg for this process and packs it into packet (sizeof *msg bytes);
 * returns the packet's length. */
static size_t tracer_register_packet(struct tracer_register_msg *msg, char *packet, int is_exec,
                                     const char *component)
{
    memset(&msg->req, 0, sizeof msg->req);
    msg->req.magic = TRACER_REGISTER_MAGIC;
    msg->req.pid = (uint32_t)syscall(SYS_getpid);
    msg->req.ppid = (uint32_t)syscall(SYS_getppid);
    msg->req.tid = (uint32_t)syscall(SYS_gettid);
    msg->req.is_exec = (uint32_t)is_exec;
    if (component)
        snprintf(msg->req.component, sizeof msg->req.component, "%s", component);
    ssize_t exe_len = syscall(SYS_readlink, "/proc/self/exe", msg->exe, sizeof msg->exe);
    if (exe_len < 0)
        exe_len = 0;
    int argv_len = tracer_read_self("/proc/self/cmdline", msg->argv, sizeof msg->argv);
    if (argv_len < 0)
        argv_len = 0;
    msg->req.exe_len = (uint32_t)exe_len;
    msg->req.argv_len = (uint32_t)argv_len;
    size_t off = 0;
    memcpy(packet, &msg->req, sizeof msg->req);
    off += sizeof msg->req;
    memcpy(packet + off, msg->exe, (size_t)exe_len);
    off += (size_t)exe_len;
    memcpy(packet + off, msg->argv, (size_t)argv_len);
    off += (size_t)argv_len;
    return off;
}

/* Sends the packet to collector `name` (an abstract socket) and takes its
 * reply: the region's descriptor in fds[0] and, when the collector has a
 * CPU clock table, that table's in fds[1]; *nfds says how many came.
 * 0, or -1 (no collector, a refusal, or no answer within
 * TRACER_COLLECTOR_PATIENCE_MS). */
static int tracer_register_exchange(const char *name, const char *packet, size_t len, int fds[2],
                                    size_t *nfds, uint32_t *clock_fd)
{
    int fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int rc = -1;
    /* bounds connect (a full listen backlog), the send and the reply */
    struct timeval patience = {.tv_sec = TRACER_COLLECTOR_PATIENCE_MS / 1000};
    syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_SNDTIMEO, &patience, sizeof patience);
    syscall(SYS_setsockopt, fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t nlen = strlen(name);
    if (nlen > sizeof addr.sun_path - 10)
        nlen = sizeof addr.sun_path - 10;
    memcpy(addr.sun_path + 1, "preplay-", 8);
    memcpy(addr.sun_path + 9, name, nlen);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 9 + nlen);
    if (syscall(SYS_connect, fd, &addr, alen) < 0)
        goto done;
    if (syscall(SYS_sendto, fd, packet, len, MSG_NOSIGNAL, NULL, 0) != (long)len)
        goto done;

    struct tracer_register_reply reply;
    char cbuf[CMSG_SPACE(2 * sizeof(int))];
    struct iovec iov = {.iov_base = &reply, .iov_len = sizeof reply};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    long n;
    do {
        n = syscall(SYS_recvmsg, fd, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n != (long)sizeof reply || reply.magic != TRACER_REGISTER_MAGIC || reply.status != 0)
        goto done;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        goto done;
    *nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    *clock_fd = reply.clock_fd;
    memcpy(fds, CMSG_DATA(c), (*nfds > 2 ? 2 : *nfds) * sizeof(int));
    rc = 0;
done:
    syscall(SYS_close, fd);
    return rc;
}

/* Maps the region the collector handed over (fds[0]), checks it, attaches
 * the CPU clock table (fds[1] when nfds > 1) and makes the process active:
 * 0, or -1 (the process runs untraced). Closes both descriptors. */
static int tracer_region_map(const int fds[2], size_t nfds, uint32_t clock_fd, uint32_t pid)
{
    /* The whole region is 1 GiB of address space: a process limited below
     * that (RLIMIT_AS) maps a prefix with fewer thread rings instead of
     * running untraced. */
    static const uint32_t ring_choices[] = {TRACER_RING_COUNT - 1, 256, 64, 16};
    void *region = MAP_FAILED;
    uint32_t thread_rings = 0;
    for (size_t i = 0; i < sizeof ring_choices / sizeof ring_choices[0] && region == MAP_FAILED;
         i++) {
        thread_rings = ring_choices[i];
        region = (void *)syscall(SYS_mmap, NULL, tracer_region_bytes(thread_rings),
                                 PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
    }
    syscall(SYS_close, fds[0]);
    if (region == MAP_FAILED) {
        if (fds[1] >= 0)
            syscall(SYS_close, fds[1]);
        return -1;
    }
    struct tracer_control *ctl = tracer_region_control(region);
    if (ctl->magic != TRACER_SHM_MAGIC || ctl->version != TRACER_SHM_VERSION) {
        syscall(SYS_munmap, region, tracer_region_bytes(thread_rings));
        if (fds[1] >= 0)
            syscall(SYS_close, fds[1]);
        return -1;
    }
    atomic_store_explicit(&ctl->mapped_rings, thread_rings, memory_order_relaxed);
    tracer_cpu_time_attach(nfds > 1 ? fds[1] : -1, clock_fd == TRACER_CLOCK_FD_PAGE);
    /* Records carry rdtsc ticks when the collector's calibration converts
     * them (it keeps the TSC block we read), else vDSO nanoseconds. Set
     * before any record: the collector reads it when it drains. */
    tracer_global.ring_clock_tsc = tracer_cpu_time_tsc != NULL;
    atomic_store_explicit(&ctl->ring_clock,
                          tracer_global.ring_clock_tsc ? TRACER_RING_CLOCK_TSC
                                                       : TRACER_RING_CLOCK_MONO,
                          memory_order_release);
    tracer_global.only_mask = ctl->only_mask;
    tracer_global.stack_depth = ctl->stack_depth;
    tracer_global.path_filter_set = ctl->path_filter[0] != 0;
    tracer_global.lock_fold = ctl->lock_fold != 0;
    tracer_global.cpu_clock = ctl->cpu_clock;
    tracer_global.cpu_gap_ns = ctl->cpu_gap_ns;
    if (ctl->cpu_clock != TRACER_CPU_CLOCK_BPF && (ctl->only_mask & TRACER_ONLY_CPU))
        tracer_rseq_probe();
    tracer_global.region = region;
    tracer_global.thread_rings = thread_rings;
    tracer_global.control = ctl;
    tracer_global.pid = pid;
    tracer_global.generation++;
    atomic_thread_fence(memory_order_release);
    tracer_global.active = 1;
    return 0;
}

/* Connects to the collector, registers this process and maps the region it
 * hands back. Returns 0 or -1 (inactive: the process runs untraced, also
 * when the collector does not answer within TRACER_COLLECTOR_PATIENCE_MS).
 * Uses raw syscalls only. */
static int tracer_register(int is_exec)
{
    const char *name = tracer_env("PREPLAY_COLLECTOR");
    if (!name || !*name)
        return -1;
    const char *component = tracer_env("PREPLAY_COMPONENT");
    struct tracer_register_msg msg;
    char packet[sizeof msg];
    size_t len = tracer_register_packet(&msg, packet, is_exec, component);
    int fds[2] = {-1, -1};
    size_t nfds = 0;
    uint32_t clock_fd = TRACER_CLOCK_FD_BPF_TABLE;
    if (tracer_register_exchange(name, packet, len, fds, &nfds, &clock_fd) != 0)
        return -1;
    return tracer_region_map(fds, nfds, clock_fd, msg.req.pid);
}

/* The end of the thread that calls exit (usually main), which runs no
 * thread-key destructors: the streams' last flush, then its THREAD_EXIT. */
static void tracer_exit_last(void *arg)
{
    (void)arg;
    tracer_stdio_exit_flush();
    tracer_thread_end(&tracer_tls);
}

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

/* exit() runs the app's atexit handlers, then the library destructors:
 * the program's, then ours, then those of the libraries loaded before us
 * (libc's dependents: a DB client closing its connections), which still
 * do traced work in this thread. So ours only registers tracer_exit_last
 * as one more exit handler (dso NULL: not run with this library's own
 * handlers), which glibc runs after the destructors, just before it
 * flushes the streams and ends the process; the thread's end is written
 * last and nothing lands after it. When that registration fails (no
 * memory), the end is written here. */
__attribute__((destructor)) static void tracer_fini(void)
{
    if (!tracer_global.active || __cxa_atexit(tracer_exit_last, NULL, NULL) != 0)
        tracer_exit_last(NULL);
}

/* ---- process lifecycle -------------------------------------------------- */

void tracer_after_fork_child(void)
{
    /* The child inherited a mapping of the parent's region: writing there
     * would corrupt the parent's rings. Drop it and register anew; each
     * part of the library then forgets what was the parent's. */
    if (!tracer_global.region)
        return;
    tracer_global.active = 0;
    syscall(SYS_munmap, tracer_global.region, tracer_region_bytes(tracer_global.thread_rings));
    tracer_global.region = NULL;
    tracer_global.control = NULL;
    tracer_thread_after_fork();
    tracer_process_after_fork();
    tracer_ring_after_fork();
    tracer_cpu_time_after_fork();
    tracer_stacks_after_fork();
    tracer_db_wire_after_fork();
    tracer_datagram_peers_reset();
    tracer_strings_after_fork();
    tracer_lock_fold_after_fork();
    tracer_register(0);
    tracer_fd_after_fork(); /* interns paths: after registering */
}

void tracer_before_exec(const char *path)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_ALL);
    if (!t)
        return;
    uint64_t now = tracer_event_begin(t);
    uint32_t path_id = path ? tracer_intern(path, strlen(path)) : 0;
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_CONTROL, TRACE_CTL_EXEC, now, now);
    if (ev) {
        ev->u.control.arg0 = path_id;
        tracer_commit(t);
    }
    tracer_event_end(t, now);
}

/* Registers the process, once: from our constructor, or from the first
 * wrapped call when that comes sooner. The dynamic loader runs the
 * constructors of the program's own libraries before a preloaded one's
 * (dependencies first; the preloaded library is first in load order, so
 * last to initialize), and those constructors do I/O: libselinux reads
 * /proc/filesystems while lsblk starts. */
int tracer_init_once(void)
{
    if (atomic_load_explicit(&tracer_init_tried, memory_order_relaxed))
        return -1;
    if (atomic_exchange(&tracer_init_tried, 1) || !tracer_collector_env_present())
        return 0;
    tracer_threads_init();
    tracer_strings_init();
    const char *exec_marker = tracer_env("PREPLAY_EXEC_PID");
    int is_exec = exec_marker && (uint32_t)atoi(exec_marker) == (uint32_t)syscall(SYS_getpid);
    tracer_register(is_exec);
    return 0;
}

__attribute__((constructor)) static void tracer_init(void)
{
    tracer_init_once();
}

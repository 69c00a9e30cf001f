/* collector.c - owns every traced process's shared-memory region (a memfd
 * created here and handed over at registration), drains the rings into one
 * trace file per process, and notices process exits through pidfds, so a
 * process killed by SIGKILL still leaves every event it wrote.
 *
 * Drain order per region follows shm_layout.h: snapshot thread ring heads,
 * drain ring 0 (definitions) fully, then each thread ring to its snapshot.
 * A thread's CPU time travels in each record's header and becomes a CPU
 * event ending where that record's event starts. */
#include "collector.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collector_counters.h"
#include "collector_pieces.h"
#include "collector_waker.h"
#include "cpuclock_loader.h"
#include "grow_array.h"
#include "label_rules.h"
#include "out_file.h"
#include "shm_layout.h"
#include "trace_file.h"

#ifndef PREPLAY_VERSION
#define PREPLAY_VERSION "0"
#endif

/* per process: the current image (an exec retires the old image's region
 * when the new one registers, collector_retire_regions) */
#define COLLECTOR_MAX_REGIONS 4

struct collector_region {
    void *base;
    uint64_t folded_seen[TRACER_RING_COUNT];        /* tracer_ring.folded_holds written */
    uint32_t folded_shared_seen[TRACER_RING_COUNT]; /* tracer_ring.folded_shared written */
    uint64_t last_end_ns[TRACER_RING_COUNT];        /* per ring: end of the last event */
    uint64_t last_end_raw[TRACER_RING_COUNT];       /* the same in the ring clock */
    uint64_t lost_seen[TRACER_RING_COUNT];
    uint64_t lost_nested_seen[TRACER_RING_COUNT];
    uint64_t untraced_calls_seen; /* tracer_control.untraced_calls already written as LOSS */
    uint64_t untraced_since_ns;   /* when those were noted (the next LOSS's from_ns) */
    int answered;                 /* the process got the region (else stats.untraced) */
};

struct collector_process {
    uint32_t pid;
    int pidfd;
    int exited;
    struct trace_writer *writer;
    struct collector_region *regions[COLLECTOR_MAX_REGIONS];
    int nregions;
    uint64_t events;
    int write_failed;               /* the trace could not be written: events are discarded */
    size_t poll_slot;               /* index in collector.pollfds during collector_poll, 0 = none */
    struct collector_pieces pieces; /* a long string being joined from ring 0 */
    char path[4096];
};

/* The trace files' zstd level: the collector competes with the app for CPU,
 * and a fast level costs a few percent of bytes for a sixth of its CPU. */
#define COLLECTOR_ZSTD_LEVEL (-1)

/* The longest nap while rings are being written (a slow writer's records
 * reach the trace within it). */
#define COLLECTOR_BUSY_NAP_NS 10000000ull

/* The TSC conversion's recalibrations: the first comes 10 ms after the
 * loader's 10 ms calibration, then each interval doubles up to once a
 * second. The rate is re-estimated over the whole span since the first
 * calibration, so its error shrinks as the span grows; until the span is
 * long, a one-second interval would let a pair's jitter turn into a large
 * offset (a 10 ms span and 50 ns of jitter: 5 ppm, 5 us after a second;
 * docs/cpu-time.md has the measurement). Doubling keeps each offset about
 * one pair's jitter. */
#define COLLECTOR_TSC_RECAL_FIRST_NS 10000000ull
#define COLLECTOR_TSC_RECAL_NS 1000000000ull

struct collector {
    struct collector_options opt;
    char out_dir[4096];
    char recording_id[40];
    char host[256];
    char db_suffix[64];
    char path_prefix[256];
    int listen_fd;
    int enabled;
    /* The number of the current tracing window: what the control pages'
     * `enabled` holds while tracing is on (shm_layout.h). */
    uint32_t window;
    struct collector_process **procs;
    size_t nprocs, cap;
    struct collector_stats stats;
    int cpu_clock_bpf;     /* the BPF CPU clock is loaded */
    int tsc_recalibrating; /* a calibrated TSC block is published (collector_tsc_table) */
    /* Without the BPF clock: the clock page carrying the TSC block
     * (cpuclock_clock_page_create), its descriptor (-1: none) and why
     * there is none */
    struct cpuclock_table clock_page;
    int clock_page_fd;
    char clock_page_note[160];
    uint64_t drained_records; /* records drained by the current round */
    int ring_pressure;        /* a ring was > 1/4 full this round, or a producer waited */
    uint64_t round_max_bytes; /* most bytes one ring held at this round's drain */
    uint64_t round_start_ns;  /* CLOCK_MONOTONIC at the start of the last round */
    uint64_t nap_ns;          /* from the last drain to the next (rate-adapted), 0 = the timeout */
    double fill_rate;         /* bytes per ns of the fastest ring, smoothed (collector_poll) */
    struct pollfd *pollfds;   /* listening socket, waker, live pidfds (collector_poll) */
    size_t poll_cap;
    struct pollfd fixed_pollfds[2]; /* the poll set when pollfds cannot be allocated */
    /* Producers waiting for ring room wake us through it, so naps can be
     * long; NULL (no futex_waitv) or not watching every region: naps are
     * capped at COLLECTOR_UNWATCHED_NAP_MS as a producer's longest wait. */
    struct collector_waker *waker;
    int waker_watches_all;
    int write_failed_pending; /* a trace write failed since the last collector_poll */
    int relabel;              /* --label rules given: STRINGs of a label's form are mapped */
    uint64_t tsc_recalibrated_ns;
    uint64_t tsc_recal_interval_ns; /* to the next recalibration (COLLECTOR_TSC_RECAL_*) */
    /* Every TSC conversion published (at load, then at each recalibration):
     * rings in TSC ring clock convert with the one in force when a value
     * was taken, as the app would have converted it. */
    struct cpuclock_tsc_history tsc_history;
    char record_options[512];            /* collector_describe_options, for every trace header */
    struct collector_counters *counters; /* NULL: --window 0, or stopped */
    char cpu_clock_note[256];            /* why the fallback is used, when it is */
    char waker_note[128];                /* why there is no waker, when there is none */
    char error[512];
};

static uint64_t collector_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void collector_random_id(char *out, size_t cap)
{
    unsigned char b[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, b, sizeof b) != (ssize_t)sizeof b) {
        uint64_t x = collector_clock(CLOCK_REALTIME) ^ (uint64_t)getpid() << 32;
        memcpy(b, &x, 8);
        memcpy(b + 8, &x, 8);
    }
    if (fd >= 0)
        close(fd);
    size_t n = 0;
    for (int i = 0; i < 16 && n + 2 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%02x", b[i]);
}

static int collector_mkdir_p(const char *dir, char *err, size_t errlen)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
            return -1;
        }
        *p = '/';
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    return 0;
}

/* Keeps the TSC conversion now published (a no-op without a calibrated
 * block: apps then use the CLOCK_MONOTONIC ring clock). */
/* The loaded clock's TSC block, when the loader calibrated it (only then
 * do apps time records with the TSC, and only then is it recalibrated:
 * recalibrating an uncalibrated block would be a 10 ms busy wait). */
static struct cpuclock_table *collector_tsc_table(struct collector *c)
{
    struct cpuclock_table *t = c->cpu_clock_bpf ? cpuclock_bpf_table() : &c->clock_page;
    return t && t->header && (t->header->flags & CPUCLOCK_HEADER_TSC_VALID) ? t : NULL;
}

static void collector_note_tsc(struct collector *c)
{
    struct cpuclock_table *t = collector_tsc_table(c);
    if (t)
        (void)cpuclock_tsc_history_note(&c->tsc_history, &t->header->tsc);
}

/* The options that decide what is traced, as `record` spells them (only
 * those not at their default), for the trace header: a reader of the
 * trace learns what was left out. */
static void collector_describe_options(const struct collector_options *o, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
#define COLLECTOR_ADD(...)                                                                         \
    do {                                                                                           \
        if (n < cap)                                                                               \
            n += (size_t)snprintf(out + n, cap - n, __VA_ARGS__);                                  \
    } while (0)
    if (o->only_mask && o->only_mask != TRACER_ONLY_ALL) {
        const char *sep = "--only ";
        for (uint32_t bit = 1; bit <= TRACER_ONLY_ALL; bit <<= 1)
            if (o->only_mask & bit) {
                COLLECTOR_ADD("%s%s", sep, tracer_family_name(bit));
                sep = ",";
            }
        COLLECTOR_ADD(" ");
    }
    if (o->path_prefix && o->path_prefix[0])
        COLLECTOR_ADD("--path-prefix %s ", o->path_prefix);
    for (uint32_t i = 0; i < o->nnet_ports && i < sizeof o->net_ports / sizeof o->net_ports[0]; i++)
        COLLECTOR_ADD("--port %u ", o->net_ports[i]);
    if (!(o->ndb_ports == 1 && o->db_ports[0] == COLLECTOR_DEFAULT_DB_PORT))
        for (uint32_t i = 0; i < o->ndb_ports && i < 8; i++)
            COLLECTOR_ADD("--db-port %u ", o->db_ports[i]);
    if (o->db_socket_suffix && strcmp(o->db_socket_suffix, COLLECTOR_DEFAULT_DB_SOCKET))
        COLLECTOR_ADD("--db-socket %s ", o->db_socket_suffix);
    if (o->keep_query)
        COLLECTOR_ADD("--keep-query ");
    if (o->no_lock_folding)
        COLLECTOR_ADD("--no-lock-folding ");
    if (o->db_max_statement && o->db_max_statement != TRACER_DB_STATEMENT_DEFAULT)
        COLLECTOR_ADD("--db-max-statement %u ", o->db_max_statement);
    if (o->drop_when_full)
        COLLECTOR_ADD("--drop ");
    if (o->max_bytes)
        COLLECTOR_ADD("--max-size %llu ", (unsigned long long)o->max_bytes);
    if (o->stack_depth)
        COLLECTOR_ADD("--stacks %u ", o->stack_depth);
    if (o->cpu_clock == TRACER_CPU_CLOCK_BPF)
        COLLECTOR_ADD("--cpu-clock bpf ");
    else if (o->cpu_clock == TRACER_CPU_CLOCK_THREAD)
        COLLECTOR_ADD("--cpu-clock thread ");
    else if (o->cpu_gap_ns && o->cpu_gap_ns != TRACER_CPU_GAP_DEFAULT_NS)
        COLLECTOR_ADD("--cpu-clock gap:%u ", o->cpu_gap_ns / 1000);
    if (o->ring_clock == CPUCLOCK_TSC_FORCE)
        COLLECTOR_ADD("--ring-clock tsc ");
    else if (o->ring_clock == CPUCLOCK_TSC_NEVER)
        COLLECTOR_ADD("--ring-clock monotonic ");
#undef COLLECTOR_ADD
    if (n >= cap)
        n = cap - 1; /* truncated: what fits */
    /* the --label rules last, whole (label_rules_describe) */
    if (label_rules_count(o->label_rules) && n + 1 < cap)
        n += label_rules_describe(o->label_rules, out + n, cap - n);
    while (n > 0 && out[n - 1] == ' ')
        out[--n] = '\0';
}

/* The header every trace file of the recording shares; the process's own
 * fields (pid, exe, argv, component) are the caller's to fill. */
static void collector_header(const struct collector *c, struct trace_header *h)
{
    memset(h, 0, sizeof *h);
    snprintf(h->host, sizeof h->host, "%s", c->host);
    snprintf(h->recording_id, sizeof h->recording_id, "%s", c->recording_id);
    snprintf(h->tracer_version, sizeof h->tracer_version, "%s", PREPLAY_VERSION);
    h->mono_anchor_ns = collector_clock(CLOCK_MONOTONIC);
    h->real_anchor_ns = collector_clock(CLOCK_REALTIME);
    for (uint32_t i = 0; i < c->opt.ncpu_scores && i < TRACE_MAX_CPU_SCORES; i++)
        h->cpu_scores[h->ncpu_scores++] = c->opt.cpu_scores[i];
    snprintf(h->record_options, sizeof h->record_options, "%s", c->record_options);
}

static int collector_start_counters(struct collector *c, char *err, size_t errlen)
{
    struct trace_header h;
    collector_header(c, &h);
    c->counters = collector_counters_start(c->out_dir, c->opt.window_s, &h, err, errlen);
    return c->counters ? 0 : -1;
}

struct collector *collector_create(const struct collector_options *opt, char *err, size_t errlen)
{
    struct collector *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->opt = *opt;
    c->relabel = label_rules_count(opt->label_rules) > 0;
    snprintf(c->out_dir, sizeof c->out_dir, "%s", opt->out_dir);
    if (opt->db_socket_suffix)
        snprintf(c->db_suffix, sizeof c->db_suffix, "%s", opt->db_socket_suffix);
    if (opt->path_prefix)
        snprintf(c->path_prefix, sizeof c->path_prefix, "%s", opt->path_prefix);
    c->enabled = !opt->start_disabled;
    c->window = 1;
    collector_random_id(c->recording_id, sizeof c->recording_id);
    if (gethostname(c->host, sizeof c->host) != 0)
        snprintf(c->host, sizeof c->host, "unknown");
    /* A directory the traces cannot go to fails now, before the app starts
     * (a read-only mount, an immutable directory, -o naming a file): never
     * a recording that silently holds nothing. */
    if (collector_mkdir_p(c->out_dir, err, errlen) != 0 ||
        out_file_check_dir(c->out_dir, err, errlen) != 0)
        goto fail;

    c->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (c->listen_fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        goto fail;
    }
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t nlen = strlen(opt->name);
    if (nlen > sizeof addr.sun_path - 10) {
        snprintf(err, errlen, "collector name too long: %s", opt->name);
        goto fail;
    }
    memcpy(addr.sun_path + 1, "preplay-", 8);
    memcpy(addr.sun_path + 9, opt->name, nlen);
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 9 + nlen);
    if (bind(c->listen_fd, (struct sockaddr *)&addr, alen) != 0) {
        snprintf(err, errlen, "cannot listen as collector '%s': %s%s", opt->name, strerror(errno),
                 errno == EADDRINUSE ? " (another collector has this name)" : "");
        goto fail;
    }
    if (listen(c->listen_fd, 128) != 0) {
        snprintf(err, errlen, "listen: %s", strerror(errno));
        goto fail;
    }
    c->waker = collector_waker_start(c->waker_note, sizeof c->waker_note);
    /* Per-thread CPU time: the BPF clock only when asked for (it runs on
     * every context switch of the machine); otherwise, or when it cannot
     * load, the gap clock, which still gets the TSC calibration from the
     * clock page (docs/cpu-time.md). */
    char why[200];
    cpuclock_bpf_set_tsc_policy((enum cpuclock_tsc_policy)opt->ring_clock);
    c->clock_page_fd = -1;
    if (opt->cpu_clock == TRACER_CPU_CLOCK_BPF) {
        if (cpuclock_bpf_load(why, sizeof why))
            c->cpu_clock_bpf = 1;
        else
            snprintf(c->cpu_clock_note, sizeof c->cpu_clock_note, "%s", why);
    }
    if (!c->cpu_clock_bpf) {
        if (c->opt.cpu_clock == TRACER_CPU_CLOCK_BPF)
            c->opt.cpu_clock = TRACER_CPU_CLOCK_GAP; /* what runs, for the header */
        c->clock_page_fd = cpuclock_clock_page_create(&c->clock_page, c->clock_page_note,
                                                      sizeof c->clock_page_note);
    }
    /* the clock that runs, not the one asked for */
    collector_describe_options(&c->opt, c->record_options, sizeof c->record_options);
    c->tsc_recalibrating = collector_tsc_table(c) != NULL;
    if (c->tsc_recalibrating) {
        c->tsc_recalibrated_ns = collector_clock(CLOCK_MONOTONIC);
        c->tsc_recal_interval_ns = COLLECTOR_TSC_RECAL_FIRST_NS;
        collector_note_tsc(c);
    }
    if (opt->window_s > 0 && collector_start_counters(c, err, errlen) != 0) {
        collector_finish(c, NULL, 0);
        return NULL;
    }
    return c;
fail:
    if (c->listen_fd > 0)
        close(c->listen_fd);
    free(c);
    return NULL;
}

_Static_assert(sizeof((struct collector_options *)0)->net_ports ==
                   sizeof((struct tracer_control *)0)->net_ports,
               "--port holds as many ports as the control block");

static void collector_init_control(struct collector *c, struct tracer_control *ctl)
{
    ctl->magic = TRACER_SHM_MAGIC;
    ctl->version = TRACER_SHM_VERSION;
    ctl->ring_count = TRACER_RING_COUNT;
    ctl->ring_bytes = TRACER_RING_BYTES;
    ctl->only_mask = c->opt.only_mask ? c->opt.only_mask : TRACER_ONLY_ALL;
    ctl->drop_when_full = (uint32_t)c->opt.drop_when_full;
    /* with --label rules the collector sees the query and drops it itself */
    ctl->keep_query = c->opt.keep_query || label_rules_count(c->opt.label_rules);
    ctl->stack_depth = c->opt.stack_depth;
    ctl->lock_fold = !c->opt.no_lock_folding;
    ctl->cpu_clock = c->cpu_clock_bpf                              ? TRACER_CPU_CLOCK_BPF
                     : c->opt.cpu_clock == TRACER_CPU_CLOCK_THREAD ? TRACER_CPU_CLOCK_THREAD
                                                                   : TRACER_CPU_CLOCK_GAP;
    ctl->cpu_gap_ns = c->opt.cpu_gap_ns ? c->opt.cpu_gap_ns : TRACER_CPU_GAP_DEFAULT_NS;
    ctl->ndb_ports = c->opt.ndb_ports > 8 ? 8 : c->opt.ndb_ports;
    memcpy(ctl->db_ports, c->opt.db_ports, sizeof ctl->db_ports);
    snprintf(ctl->db_socket_suffix, sizeof ctl->db_socket_suffix, "%s", c->db_suffix);
    snprintf(ctl->path_filter, sizeof ctl->path_filter, "%s", c->path_prefix);
    ctl->nnet_ports =
        c->opt.nnet_ports > TRACER_NET_PORTS_MAX ? TRACER_NET_PORTS_MAX : c->opt.nnet_ports;
    ctl->db_max_statement =
        c->opt.db_max_statement ? c->opt.db_max_statement : TRACER_DB_STATEMENT_DEFAULT;
    memcpy(ctl->net_ports, c->opt.net_ports, ctl->nnet_ports * sizeof ctl->net_ports[0]);
    atomic_store(&ctl->enabled, c->enabled ? c->window : 0);
}

static struct collector_process *collector_find(struct collector *c, uint32_t pid)
{
    for (size_t i = 0; i < c->nprocs; i++)
        if (c->procs[i]->pid == pid && !c->procs[i]->exited)
            return c->procs[i];
    return NULL;
}

static void collector_basename(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    snprintf(out, cap, "%s", b ? b + 1 : path);
    for (char *p = out; *p; p++)
        if (*p == '/' || *p == ' ')
            *p = '_';
}

static struct collector_process *collector_new_process(struct collector *c,
                                                       const struct tracer_register_request *req,
                                                       const char *exe, const char *argv,
                                                       uint32_t argv_len)
{
    struct collector_process *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->pid = req->pid;
    p->pidfd = (int)syscall(SYS_pidfd_open, req->pid, 0);
    char base[64];
    collector_basename(req->component[0] ? req->component : exe, base, sizeof base);
    if (!base[0])
        snprintf(base, sizeof base, "process");
    snprintf(p->path, sizeof p->path, "%s/%s-%u.trace", c->out_dir, base, req->pid);

    struct trace_header h;
    collector_header(c, &h);
    snprintf(h.component, sizeof h.component, "%s", req->component);
    snprintf(h.exe, sizeof h.exe, "%s", exe);
    h.argv_joined = (char *)argv;
    h.argv_len = argv_len;
    h.pid = req->pid;
    h.ppid = req->ppid;
    /* zstd level -1 (fast): on nginx at saturation the collector spent
     * 86-91 ns of CPU per event against 106-109 at the default level 3, for
     * 2.15-2.19 bytes per event instead of 2.00-2.05 (docs/benchmarks.md). */
    struct trace_writer_options wo = {.max_bytes = c->opt.max_bytes,
                                      .compression_level = COLLECTOR_ZSTD_LEVEL};
    char err[256];
    p->writer = trace_writer_open(p->path, &h, &wo, err, sizeof err);
    if (!p->writer) {
        snprintf(c->error, sizeof c->error, "%s", err);
        c->write_failed_pending = 1; /* collector_poll reports it */
        if (p->pidfd >= 0)
            close(p->pidfd);
        free(p);
        return NULL;
    }
    if (grow_array((void **)&c->procs, &c->cap, c->nprocs + 1, sizeof *c->procs, 16) != 0) {
        trace_writer_close(p->writer, NULL, 0);
        free(p);
        return NULL;
    }
    c->procs[c->nprocs++] = p;
    c->stats.processes++;
    collector_counters_add_pid(c->counters, p->pid);
    return p;
}

/* Points the waker at every live region's collector_wake word. Called when
 * a region comes and before one goes (its memory must still be mapped). */
static void collector_watch_regions(struct collector *c)
{
    if (!c->waker)
        return;
    /* one word past the waker's limit tells it (and so us) that some
     * regions are not watched */
    _Atomic uint32_t *words[COLLECTOR_WAKER_MAX_WORDS + 1];
    size_t n = 0;
    for (size_t i = 0; i < c->nprocs && n < COLLECTOR_WAKER_MAX_WORDS + 1; i++) {
        struct collector_process *p = c->procs[i];
        for (int j = 0; j < p->nregions && n < COLLECTOR_WAKER_MAX_WORDS + 1; j++)
            words[n++] = &tracer_region_control(p->regions[j]->base)->collector_wake;
    }
    c->waker_watches_all = collector_waker_watch(c->waker, words, n) == 0;
}

static int collector_send_reply(int fd, int status, int memfd, int mapfd, uint32_t clock_fd)
{
    struct tracer_register_reply reply = {
        .magic = TRACER_REGISTER_MAGIC, .status = status, .clock_fd = clock_fd};
    struct iovec iov = {.iov_base = &reply, .iov_len = sizeof reply};
    char cbuf[CMSG_SPACE(2 * sizeof(int))];
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    int fds[2] = {memfd, mapfd};
    int nfds = memfd < 0 ? 0 : (mapfd < 0 ? 1 : 2);
    reply.nfds = (uint32_t)nfds;
    if (nfds) {
        memset(cbuf, 0, sizeof cbuf);
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
    }
    return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof reply ? 0 : -1;
}

/* Does process pid descend from this collector's process? Its parents,
 * from /proc, up to ours (yes) or init (no: a daemon that left our tree). */
static int collector_descends(uint32_t pid)
{
    uint32_t self = (uint32_t)getpid();
    for (int depth = 0; depth < 256 && pid > 1; depth++) {
        if (pid == self)
            return 1;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%u/stat", pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        if (n <= 0)
            return 0;
        buf[n] = 0;
        const char *rp = strrchr(buf, ')'); /* the name may hold spaces and ')' */
        unsigned ppid;
        if (!rp || sscanf(rp + 1, " %*c %u", &ppid) != 1)
            return 0;
        pid = ppid;
    }
    return 0;
}

/* May the peer of conn register? Its credentials come from the kernel
 * (SO_PEERCRED), not from what it claims; *cred gets them. */
static int collector_peer_allowed(struct collector *c, int conn, struct ucred *cred)
{
    socklen_t len = sizeof *cred;
    cred->uid = (uid_t)-1;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, cred, &len) != 0 || cred->pid <= 0)
        return 0;
    if (cred->uid == 0 || cred->uid == geteuid())
        return 1;
    for (uint32_t i = 0; i < c->opt.nallow_uids && i < 16; i++)
        if (c->opt.allow_uids[i] == cred->uid)
            return 1;
    return c->opt.accept_descendants && collector_descends((uint32_t)cred->pid);
}

static int collector_retire_regions(struct collector *c, struct collector_process *p);

/* Handles one registration: creates the region and the process's writer
 * (or, after exec, adds a region to the same process and file). */
static void collector_register(struct collector *c, int conn)
{
    static unsigned char buf[sizeof(struct tracer_register_request) + 4096 + 8192 + 16];
    ssize_t n = recv(conn, buf, sizeof buf, 0);
    if (n < (ssize_t)sizeof(struct tracer_register_request))
        return;
    struct ucred cred; /* read first: closing on an unread request resets the peer */
    if (!collector_peer_allowed(c, conn, &cred)) {
        c->stats.refused++;
        c->stats.refused_uid = cred.uid;
        collector_send_reply(conn, EPERM, -1, -1, 0);
        return;
    }
    struct tracer_register_request req;
    memcpy(&req, buf, sizeof req);
    if (req.magic != TRACER_REGISTER_MAGIC ||
        sizeof req + (size_t)req.exe_len + req.argv_len > (size_t)n || req.exe_len >= 4096) {
        collector_send_reply(conn, EPROTO, -1, -1, 0);
        return;
    }
    req.component[sizeof req.component - 1] = 0;
    /* the process is who the kernel says, whatever pid it claims: that pid
     * names its trace file and is the pidfd watched for its exit */
    req.pid = (uint32_t)cred.pid;
    char exe[4097];
    memcpy(exe, buf + sizeof req, req.exe_len);
    exe[req.exe_len] = 0;
    const char *argv = (const char *)buf + sizeof req + req.exe_len;

    int memfd = (int)syscall(SYS_memfd_create, "preplay-region", MFD_CLOEXEC);
    if (memfd < 0 || ftruncate(memfd, (off_t)TRACER_REGION_BYTES) != 0) {
        if (memfd >= 0)
            close(memfd);
        collector_send_reply(conn, ENOMEM, -1, -1, 0);
        return;
    }
    void *base = mmap(NULL, TRACER_REGION_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    if (base == MAP_FAILED) {
        close(memfd);
        collector_send_reply(conn, ENOMEM, -1, -1, 0);
        return;
    }
    collector_init_control(c, tracer_region_control(base));

    struct collector_process *p = collector_find(c, req.pid);
    if (p && !req.is_exec) {
        /* same pid registering again without exec: the old process is gone
         * (pid reuse) - finish it first. */
        p->exited = 1;
        p = NULL;
    }
    if (!p)
        p = collector_new_process(c, &req, exe, argv, req.argv_len);
    struct collector_region *r = p ? calloc(1, sizeof *r) : NULL;
    if (!p || !r || p->nregions == COLLECTOR_MAX_REGIONS) {
        free(r);
        munmap(base, TRACER_REGION_BYTES);
        close(memfd);
        collector_send_reply(conn, ENOMEM, -1, -1, 0);
        return;
    }
    r->base = base;
    if (p->nregions > 0) {
        /* A new image of the same process writes into the same trace file:
         * its string and connection ids must continue where the old
         * image's stopped, or its id 1 would resolve to the old image's
         * string 1 (the reader keeps the first definition of an id). */
        struct tracer_control *old_ctl = tracer_region_control(p->regions[p->nregions - 1]->base);
        struct tracer_control *new_ctl = tracer_region_control(base);
        atomic_store(&new_ctl->next_string_id, atomic_load(&old_ctl->next_string_id));
        atomic_store(&new_ctl->next_conn_id, atomic_load(&old_ctl->next_conn_id));
    }
    if (req.is_exec && collector_retire_regions(c, p) != 0)
        c->write_failed_pending = 1; /* c->error says why; the next poll fails */
    p->regions[p->nregions++] = r;
    collector_watch_regions(c);
    /* dated before the new image can write its first record */
    uint64_t registered_ns = collector_clock(CLOCK_MONOTONIC);
    int answered = collector_send_reply(
                       conn, 0, memfd, c->cpu_clock_bpf ? cpuclock_bpf_map_fd() : c->clock_page_fd,
                       c->cpu_clock_bpf ? TRACER_CLOCK_FD_BPF_TABLE : TRACER_CLOCK_FD_PAGE) == 0;
    r->answered = answered;
    close(memfd);
    if (!answered) {
        /* The process gave up waiting (the tracer's patience, seconds)
         * and runs untraced: its trace ends here, and the summary says so. */
        c->stats.untraced++;
        p->exited = 1;
        return;
    }
    if (req.is_exec) {
        struct trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = TRACE_EV_CONTROL;
        ev.op = TRACE_CTL_EXEC;
        ev.tid = req.tid;
        ev.ts_ns = registered_ns;
        ev.u.control.arg0 = -1; /* new image registered */
        trace_writer_append(p->writer, &ev);
    }
}

static void collector_accept_all(struct collector *c)
{
    for (;;) {
        int conn = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
            return;
        struct timeval tv = {.tv_sec = 2};
        setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        collector_register(c, conn);
        close(conn);
    }
}

/* Counts n events the process's trace writer took (rc 0) or lost (rc -1).
 * When the trace cannot be written (disk full, I/O error) the first error
 * is kept for the caller (collector_poll fails once) and the rest of that
 * process's events are counted as lost and discarded: draining goes on, so
 * the app is never held by back-pressure from a collector that can no
 * longer write. */
static int collector_appended(struct collector *c, struct collector_process *p, int rc, unsigned n)
{
    if (rc != 0) {
        if (!p->write_failed) {
            p->write_failed = 1;
            c->write_failed_pending = 1;
            if (!c->error[0])
                snprintf(c->error, sizeof c->error, "%s", trace_writer_error(p->writer));
        }
        c->stats.lost += n;
        return 0;
    }
    p->events += n;
    c->stats.events += n;
    return 0;
}

/* A STRING the process defines, with --label rules: one of a request
 * label's form (label_rules_is_label) is written as the label the rules
 * give it, its query dropped unless --keep-query; others as they are. Each
 * distinct string comes once (the process interns them), so the rules run
 * once per distinct label, and LABEL events, which name it by id, are left
 * alone. */
static int collector_append_string(struct collector *c, struct collector_process *p,
                                   const struct trace_event *ev)
{
    const char *s = ev->data;
    if (!s || !label_rules_is_label(s, ev->u.string.len))
        return collector_appended(c, p, trace_writer_append(p->writer, ev), 1);
    struct trace_event relabelled = *ev;
    const char *out = NULL;
    relabelled.u.string.len = (uint32_t)label_rules_apply(c->opt.label_rules, s, ev->u.string.len,
                                                          !c->opt.keep_query, &out);
    relabelled.data = out;
    return collector_appended(c, p, trace_writer_append(p->writer, &relabelled), 1);
}

/* Appends one event to the process's trace. */
static int collector_append(struct collector *c, struct collector_process *p,
                            const struct trace_event *ev)
{
    if (ev->type == TRACE_EV_STRING && c->relabel)
        return collector_append_string(c, p, ev);
    return collector_appended(c, p, trace_writer_append(p->writer, ev), 1);
}

/* Hands the drained bytes back to the ring's producer and wakes it if it
 * waits for room. */
static int collector_release_ring(struct tracer_ring *r, uint64_t tail)
{
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    if (atomic_load_explicit(&r->producer_waiting, memory_order_acquire)) {
        atomic_store_explicit(&r->producer_waiting, 0, memory_order_release);
        syscall(SYS_futex, &r->producer_waiting, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    }
    return 0;
}

/* The event an EVENT record holds (its prefix of struct trace_event, up
 * to its type's union member zero-filled when the record is shorter), with
 * STRING/STACK bytes pointing into the ring. The union past the type's
 * member keeps whatever an earlier event left: nothing reads it (zeroing
 * it was a quarter of this function's CPU on nginx). */
static struct trace_event *collector_expand_event(const struct tracer_record_header *h,
                                                  uint32_t size, struct trace_event *ev)
{
    size_t ev_bytes = size - sizeof *h;
    const unsigned char *src = (const unsigned char *)h + sizeof *h;
    uint8_t type = src[offsetof(struct trace_event, type)];
    /* the frequent types whole: a copy of constant size is a few moves (a
     * variable one is `rep movs`, which alone cost a third of this
     * function's CPU on nginx) */
#define COLLECTOR_COPY_WHOLE(TYPE, member)                                                         \
    case TYPE:                                                                                     \
        if (ev_bytes >= TRACER_EVENT_BYTES(member)) {                                              \
            memcpy(ev, src, TRACER_EVENT_BYTES(member));                                           \
            ev->data = NULL;                                                                       \
            return ev;                                                                             \
        }                                                                                          \
        break;
    switch (type) {
        COLLECTOR_COPY_WHOLE(TRACE_EV_FILE, file)
        COLLECTOR_COPY_WHOLE(TRACE_EV_NET, net)
        COLLECTOR_COPY_WHOLE(TRACE_EV_LABEL, label)
        COLLECTOR_COPY_WHOLE(TRACE_EV_SOCKOPT, sockopt)
    default:
        break;
    }
#undef COLLECTOR_COPY_WHOLE
    size_t used = tracer_event_bytes(type);
    if (ev_bytes < used) {
        memcpy(ev, src, ev_bytes);
        memset((unsigned char *)ev + ev_bytes, 0, used - ev_bytes);
    } else {
        memcpy(ev, src, used);
    }
    ev->data = NULL;
    if ((ev->type == TRACE_EV_STRING || ev->type == TRACE_EV_STACK) && ev_bytes >= sizeof *ev) {
        size_t room = ev_bytes - sizeof *ev;
        size_t want =
            ev->type == TRACE_EV_STRING ? ev->u.string.len : (size_t)ev->u.stack.nframes * 8;
        if (want > room)
            want = 0;
        ev->data = (const unsigned char *)h + sizeof *h + sizeof *ev;
        if (ev->type == TRACE_EV_STRING)
            ev->u.string.len = (uint32_t)want;
        else
            ev->u.stack.nframes = (uint32_t)(want / 8);
    }
    return ev;
}

/* Drains ring `idx` of region r up to `limit` (bytes ever produced). */
static int collector_drain_ring(struct collector *c, struct collector_process *p,
                                struct collector_region *reg, unsigned idx, uint64_t limit)
{
    struct tracer_ring *r = tracer_region_ring(reg->base, idx);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (idx != 0 && limit - tail > c->round_max_bytes)
        c->round_max_bytes = limit - tail;
    if (limit - tail > TRACER_RING_DATA_BYTES / 4 ||
        atomic_load_explicit(&r->producer_waiting, memory_order_relaxed))
        c->ring_pressure = 1;
    if (tail == limit)
        return collector_release_ring(r, tail);
    /* The region's ring clock (shm_layout.h): set by the process before its
     * first record, so any ring with records has it. */
    int tsc = atomic_load_explicit(&tracer_region_control(reg->base)->ring_clock,
                                   memory_order_acquire) == TRACER_RING_CLOCK_TSC &&
              c->tsc_history.count > 0;
    struct trace_event cpu_ev, lock_ev, full_ev;
    memset(&cpu_ev, 0, sizeof cpu_ev);
    cpu_ev.type = TRACE_EV_CPU;
    memset(&lock_ev, 0, sizeof lock_ev);
    lock_ev.type = TRACE_EV_LOCK;
    /* read once: the ring header's line also holds `head`, which the
     * producer writes at every record, so a read per record would pull that
     * line across cores each time (and the producer's next commit back) */
    lock_ev.tid = r->tid;
    /* Drained bytes go back to the producer every eighth of the ring, not
     * only at the end: a producer waiting on a full ring (back-pressure)
     * then refills while the rest drains, instead of idling for the whole
     * ring's drain and then making the collector idle in turn. */
    uint64_t released = tail;
    while (tail < limit) {
        if (tail - released >= TRACER_RING_DATA_BYTES / 8) {
            collector_release_ring(r, tail);
            released = tail;
        }
        uint64_t pos = tail % TRACER_RING_DATA_BYTES;
        const struct tracer_record_header *h = (const void *)(r->data + pos);
        uint32_t size = h->size;
        /* A PAD record only needs its size and kind (8 bytes: the end of
         * the ring may have exactly that much left); events need a header. */
        uint32_t min = h->kind == TRACER_REC_PAD ? 8 : sizeof *h;
        if (size < min || size % 8 || size > TRACER_RING_DATA_BYTES - pos || tail + size > limit) {
            /* Never silent: the run fails with this message (the app wrote
             * outside its ring, or a tracer bug) and the skipped span is
             * marked as lost. */
            snprintf(c->error, sizeof c->error,
                     "%s: corrupt ring %u of pid %u at byte %llu (record size %u); rest of the "
                     "ring skipped",
                     p->path, idx, p->pid, (unsigned long long)tail, size);
            struct trace_event loss;
            memset(&loss, 0, sizeof loss);
            loss.type = TRACE_EV_LOSS;
            loss.tid = r->tid;
            loss.ts_ns = reg->last_end_ns[idx];
            loss.u.loss.from_ns = reg->last_end_ns[idx];
            loss.u.loss.to_ns = collector_clock(CLOCK_MONOTONIC);
            loss.u.loss.count = (limit - tail) / sizeof(struct tracer_record_header) + 1;
            loss.u.loss.reason = TRACE_LOSS_BUFFER_FULL;
            atomic_store_explicit(&r->tail, limit, memory_order_release);
            collector_append(c, p, &loss);
            return -1;
        }
        /* One switch on the record's kind (low byte). Records hold a
         * prefix of struct trace_event (common fields and the type's union
         * member); STRING/STACK hold it whole plus bytes; a compact LOCK
         * record is expanded to the event it stands for. The events are
         * built in place in per-call templates whose other fields stay
         * zero, so no record pays for clearing a whole struct trace_event. */
        struct trace_event *ev = NULL;
        switch (h->kind & 0xffu) {
        case TRACER_REC_LOCK:
            if (idx != 0 && size >= sizeof(struct tracer_lock_record)) {
                const struct tracer_lock_record *lr = (const void *)h;
                lock_ev.op = (uint8_t)(h->kind >> 8);
                lock_ev.ts_ns = lr->ts_ns;
                lock_ev.u.lock.kind = (uint8_t)(h->kind >> 16);
                lock_ev.u.lock.mode = (uint8_t)(h->kind >> 24);
                lock_ev.u.lock.lock_id = lr->lock_id;
                ev = &lock_ev;
            }
            break;
        case TRACER_REC_EVENT:
            if (h->kind == TRACER_REC_EVENT && size - sizeof *h >= offsetof(struct trace_event, u))
                ev = collector_expand_event(h, size, &full_ev);
            if (ev && idx == 0 && ev->type == TRACE_EV_STRING)
                ev = collector_pieces_take(&p->pieces, ev); /* NULL: a piece */
            break;
        default: /* PAD, or a kind this collector does not know: skipped */
            break;
        }
        if (ev) {
            uint64_t cpu_before = h->cpu_before_ns & ~TRACER_CPU_ESTIMATED_BIT;
            cpu_ev.flags = h->cpu_before_ns & TRACER_CPU_ESTIMATED_BIT ? TRACE_F_CPU_ESTIMATED : 0;
            uint64_t end_raw = ev->ts_ns + ev->dur_ns;
            if (tsc && !ev->ts_ns) {
                /* a record with no time (STRING definitions) keeps 0 */
                if (cpu_before)
                    cpu_before = cpuclock_tsc_segment_span_ns(
                        &c->tsc_history.segment[c->tsc_history.newest], cpu_before);
            } else if (tsc) {
                /* ring clock -> ns, with the conversion in force at ts */
                uint64_t ts_raw = ev->ts_ns;
                const struct cpuclock_tsc_segment *seg =
                    cpuclock_tsc_history_segment(&c->tsc_history, ts_raw);
                uint64_t start = cpuclock_tsc_segment_to_mono(seg, ts_raw);
                if (ev->dur_ns) {
                    uint64_t end = cpuclock_tsc_history_to_mono(&c->tsc_history, end_raw);
                    ev->dur_ns = end > start ? end - start : 0;
                }
                ev->ts_ns = start;
                /* CPU time equal to the whole gap since the previous event
                 * (the app's mark held: no switch in between) is that gap
                 * in ns exactly, so the CPU event ends where this one
                 * starts (the trace format predicts it, and a rounding
                 * nanosecond costs bytes); otherwise it is scaled */
                if (cpu_before && idx != 0 && reg->last_end_ns[idx] &&
                    cpu_before == ts_raw - reg->last_end_raw[idx] && start >= reg->last_end_ns[idx])
                    cpu_before = start - reg->last_end_ns[idx];
                else if (cpu_before)
                    cpu_before = cpuclock_tsc_segment_span_ns(seg, cpu_before);
            }
            int with_cpu = cpu_before && idx != 0;
            if (with_cpu) {
                cpu_ev.tid = ev->tid;
                cpu_ev.dur_ns = cpu_before;
                uint64_t start = reg->last_end_ns[idx];
                if (!start || start > ev->ts_ns)
                    start = ev->ts_ns > cpu_before ? ev->ts_ns - cpu_before : 0;
                cpu_ev.ts_ns = start;
            }
            if (idx != 0) {
                reg->last_end_ns[idx] = ev->ts_ns + ev->dur_ns;
                reg->last_end_raw[idx] = end_raw;
            }
            /* the CPU slice and the event: one record when the slice
             * fills the gap since the thread's previous record (the mark
             * held, the common case), FORMAT.md §6.4 */
            if (with_cpu)
                collector_appended(c, p, trace_writer_append_after_cpu(p->writer, &cpu_ev, ev), 2);
            else
                collector_append(c, p, ev);
        }
        tail += size;
        c->drained_records++;
    }
    return collector_release_ring(r, tail);
}

/* A LOSS event for what a counter gained since `seen` (of thread tid, 0 for
 * the process, lost since from_ns; 0 = unknown: now). */
static int collector_note_loss_counter(struct collector *c, struct collector_process *p,
                                       uint32_t tid, uint64_t from_ns, uint64_t now_lost,
                                       uint64_t *seen, uint32_t reason)
{
    if (now_lost == *seen)
        return 0;
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TRACE_EV_LOSS;
    ev.tid = tid;
    ev.u.loss.to_ns = collector_clock(CLOCK_MONOTONIC);
    ev.u.loss.from_ns = from_ns ? from_ns : ev.u.loss.to_ns;
    ev.ts_ns = ev.u.loss.from_ns;
    ev.u.loss.count = now_lost - *seen;
    ev.u.loss.reason = reason;
    *seen = now_lost;
    c->stats.lost += ev.u.loss.count;
    return collector_append(c, p, &ev);
}

/* Lock holds the ring's thread folded since the last look become a CONTROL
 * LOCKS_FOLDED event of that thread (FORMAT.md), dated at the end of its
 * last event drained (so its events stay in time order), or now at the
 * last drain of a ring none of whose events was drained. */
static int collector_note_folded(struct collector *c, struct collector_process *p,
                                 struct collector_region *reg, unsigned idx, int final)
{
    struct tracer_ring *r = tracer_region_ring(reg->base, idx);
    /* shared first: the thread counts a hold before its sharedness, so the
     * two read this way hold no shared hold the holds do not count yet */
    uint32_t shared = atomic_load_explicit(&r->folded_shared, memory_order_relaxed);
    uint64_t holds = atomic_load_explicit(&r->folded_holds, memory_order_relaxed);
    if (holds < reg->folded_seen[idx]) {
        /* the counters live in memory the app can scribble over: one that
         * went back is taken as the new start, never as a huge count */
        reg->folded_seen[idx] = holds;
        reg->folded_shared_seen[idx] = shared;
        return 0;
    }
    if (holds == reg->folded_seen[idx] || (!reg->last_end_ns[idx] && !final))
        return 0;
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TRACE_EV_CONTROL;
    ev.op = TRACE_CTL_LOCKS_FOLDED;
    ev.tid = r->tid;
    ev.ts_ns = reg->last_end_ns[idx] ? reg->last_end_ns[idx] : collector_clock(CLOCK_MONOTONIC);
    uint64_t n = holds - reg->folded_seen[idx];
    uint32_t n_shared = shared - reg->folded_shared_seen[idx];
    if (n_shared > n) /* counters the app scribbled over: the rest waits */
        n_shared = (uint32_t)n;
    ev.u.control.arg0 = (int64_t)(n > INT64_MAX ? INT64_MAX : n);
    ev.u.control.arg1 = (int64_t)n_shared;
    reg->folded_seen[idx] = holds;
    reg->folded_shared_seen[idx] += n_shared;
    c->stats.folded_holds += (uint64_t)ev.u.control.arg0;
    return collector_append(c, p, &ev);
}

/* Events a ring could not take (drop mode) and calls a signal handler made
 * while the tracer was writing become LOSS events: counted, never silent. */
static int collector_note_losses(struct collector *c, struct collector_process *p,
                                 struct collector_region *reg, unsigned idx)
{
    struct tracer_ring *r = tracer_region_ring(reg->base, idx);
    if (collector_note_loss_counter(c, p, r->tid, reg->last_end_ns[idx],
                                    atomic_load_explicit(&r->lost, memory_order_relaxed),
                                    &reg->lost_seen[idx], TRACE_LOSS_BUFFER_FULL))
        return -1;
    return collector_note_loss_counter(c, p, r->tid, reg->last_end_ns[idx],
                                       atomic_load_explicit(&r->lost_nested, memory_order_relaxed),
                                       &reg->lost_nested_seen[idx], TRACE_LOSS_SIGNAL_NESTED);
}

/* Calls of threads that found no free ring (tracer_thread_claim) become a
 * LOSS event of the process (tid 0) when their count grew. */
static int collector_note_untraced_calls(struct collector *c, struct collector_process *p,
                                         struct collector_region *reg)
{
    uint64_t n = atomic_load_explicit(&tracer_region_control(reg->base)->untraced_calls,
                                      memory_order_relaxed);
    if (n == reg->untraced_calls_seen)
        return 0;
    uint64_t since = reg->untraced_since_ns;
    reg->untraced_since_ns = collector_clock(CLOCK_MONOTONIC);
    return collector_note_loss_counter(c, p, 0, since, n, &reg->untraced_calls_seen,
                                       TRACE_LOSS_NO_RING);
}

/* The end of ring r's records for a process that is gone: its head, or
 * past the record staged there unpublished (a deferred OPEN whose thread
 * never settled it, tracer_open_stage). collector_drain_ring checks that
 * record as it checks every other (a bad size is a corrupt ring); a size
 * past the ring's room is not taken, so the span a corrupt ring reports
 * lost stays within the ring. */
static uint64_t collector_staged_end(const struct tracer_ring *r, uint64_t head)
{
    if (atomic_load_explicit(&r->staged_head, memory_order_acquire) != head + 1)
        return head;
    const struct tracer_record_header *h = (const void *)(r->data + head % TRACER_RING_DATA_BYTES);
    uint64_t used = head - atomic_load_explicit(&r->tail, memory_order_relaxed);
    return h->size <= TRACER_RING_DATA_BYTES - used ? head + h->size : head;
}

/* Drains every ring of a region; `final`: the last time (rings are reset),
 * `gone`: its process has ended (its staged records are taken too). */
static int collector_drain_region(struct collector *c, struct collector_process *p,
                                  struct collector_region *reg, int final, int gone)
{
    struct tracer_control *ctl = tracer_region_control(reg->base);
    enum { WORDS = sizeof ctl->rings_in_use / sizeof ctl->rings_in_use[0] };
    uint64_t snap[TRACER_RING_COUNT];
    uint32_t state[TRACER_RING_COUNT];
    uint16_t used[TRACER_RING_COUNT];
    unsigned nused = 0;
    for (unsigned w = 0; w < WORDS; w++) {
        uint64_t bits = atomic_load_explicit(&ctl->rings_in_use[w], memory_order_acquire);
        while (bits) {
            unsigned i = tracer_ring_of_in_use_bit(w, (unsigned)__builtin_ctzll(bits));
            bits &= bits - 1;
            if (i >= TRACER_RING_COUNT)
                break;
            struct tracer_ring *r = tracer_region_ring(reg->base, i);
            state[i] = atomic_load_explicit(&r->state, memory_order_acquire);
            if (state[i] == TRACER_RING_FREE)
                continue;
            snap[i] = atomic_load_explicit(&r->head, memory_order_acquire);
            if (gone)
                snap[i] = collector_staged_end(r, snap[i]);
            used[nused++] = (uint16_t)i;
        }
    }
    struct tracer_ring *r0 = tracer_region_ring(reg->base, 0);
    if (collector_drain_ring(c, p, reg, 0, atomic_load_explicit(&r0->head, memory_order_acquire)) ||
        collector_note_untraced_calls(c, p, reg))
        return -1;
    for (unsigned k = 0; k < nused; k++) {
        unsigned i = used[k];
        struct tracer_ring *r = tracer_region_ring(reg->base, i);
        if (collector_drain_ring(c, p, reg, i, snap[i]) || collector_note_losses(c, p, reg, i) ||
            collector_note_folded(c, p, reg, i, final || state[i] == TRACER_RING_EXITED))
            return -1;
        /* A ring whose thread ended (or, at the end, any ring) is free again
         * once empty: reset it for the next thread. Its in-use bit goes down
         * before the ring is FREE, so a thread that claims it next raises
         * the bit again after. */
        if ((state[i] == TRACER_RING_EXITED || final) &&
            atomic_load(&r->tail) == atomic_load(&r->head)) {
            atomic_store(&r->head, 0);
            atomic_store(&r->tail, 0);
            atomic_store(&r->lost, 0);
            atomic_store(&r->folded_holds, 0);
            atomic_store(&r->folded_shared, 0);
            reg->folded_seen[i] = 0;
            reg->folded_shared_seen[i] = 0;
            reg->last_end_ns[i] = 0;
            reg->last_end_raw[i] = 0;
            reg->lost_seen[i] = 0;
            reg->lost_nested_seen[i] = 0;
            atomic_store(&r->lost_nested, 0);
            if (!final) {
                atomic_fetch_and(&ctl->rings_in_use[tracer_ring_in_use_word(i)],
                                 ~tracer_ring_in_use_bit(i));
                atomic_store_explicit(&r->state, TRACER_RING_FREE, memory_order_release);
            }
        }
    }
    return 0;
}

/* Drains and unmaps every region of process p: the images it replaced by
 * exec. Called when the new image
 * registers: by then the kernel has ended every thread of the old one
 * (exec waits for them), so what their rings hold, staged records
 * included, is complete, and it goes into the trace before anything of
 * the new image - the EXEC marker first - so each thread's events stay in
 * time order in the file. 0, or -1 (a corrupt ring: c->error says). */
static int collector_retire_regions(struct collector *c, struct collector_process *p)
{
    int rc = 0;
    while (p->nregions > 0) {
        struct collector_region *old = p->regions[0];
        if (collector_drain_region(c, p, old, 1, 1) != 0)
            rc = -1;
        memmove(p->regions, p->regions + 1, (size_t)(p->nregions - 1) * sizeof p->regions[0]);
        p->nregions--;
        collector_watch_regions(c); /* before the memory goes */
        munmap(old->base, TRACER_REGION_BYTES);
        free(old);
    }
    return rc;
}

/* Has process p ended? Its pidfd says, or without one kill(0). */
static int collector_process_gone(const struct collector_process *p)
{
    if (p->exited)
        return 1;
    if (p->pidfd >= 0) {
        struct pollfd q = {.fd = p->pidfd, .events = POLLIN};
        return poll(&q, 1, 0) > 0;
    }
    return kill((pid_t)p->pid, 0) != 0 && errno == ESRCH;
}

/* The last drain of process p and its trace's end; `gone`: it has ended
 * (else it outlives the collector). */
static int collector_close_process(struct collector *c, struct collector_process *p, int gone)
{
    int rc = 0;
    struct collector_region *regions[COLLECTOR_MAX_REGIONS];
    int nregions = p->nregions;
    memcpy(regions, p->regions, sizeof regions);
    for (int i = 0; i < nregions; i++)
        if (collector_drain_region(c, p, regions[i], 1, gone) != 0)
            rc = -1;
    p->nregions = 0;
    collector_pieces_free(&p->pieces);
    collector_watch_regions(c); /* before the memory goes */
    for (int i = 0; i < nregions; i++) {
        uint32_t mapped = atomic_load_explicit(
            &tracer_region_control(regions[i]->base)->mapped_rings, memory_order_relaxed);
        if (!mapped && regions[i]->answered && !c->stats.unmapped++)
            snprintf(c->stats.unmapped_trace, sizeof c->stats.unmapped_trace, "%s", p->path);
        if (mapped && mapped < TRACER_RING_COUNT - 1 && !c->stats.fewer_rings++)
            snprintf(c->stats.fewer_rings_trace, sizeof c->stats.fewer_rings_trace, "%s", p->path);
        munmap(regions[i]->base, TRACER_REGION_BYTES);
        free(regions[i]);
    }
    char err[256] = "";
    if (p->writer) {
        uint64_t written = trace_writer_bytes(p->writer);
        /* the writer's message names the file; a failure already reported
         * by collector_append is not reported twice */
        if (trace_writer_close(p->writer, err, sizeof err) != 0 && !p->write_failed) {
            snprintf(c->error, sizeof c->error, "%s", err);
            rc = -1;
        }
        /* the close wrote the last frame and the string table, most of a
         * short trace: the size on disk is what the user will find */
        struct stat st;
        c->stats.bytes += stat(p->path, &st) == 0 ? (uint64_t)st.st_size : written;
        p->writer = NULL;
    }
    if (p->pidfd >= 0)
        close(p->pidfd);
    p->pidfd = -1;
    p->exited = 1;
    return rc;
}

/* Fills c->pollfds with the listening socket and the pidfd of every live
 * process (p->poll_slot = its index); returns how many. When the array
 * cannot grow, only the socket is polled and processes are checked one by
 * one as before. */
static size_t collector_poll_set(struct collector *c)
{
    if (c->poll_cap < c->nprocs + 2) {
        size_t ncap = c->nprocs + 16;
        struct pollfd *old = c->pollfds == c->fixed_pollfds ? NULL : c->pollfds;
        struct pollfd *n = realloc(old, ncap * sizeof *n);
        if (n) {
            c->pollfds = n;
            c->poll_cap = ncap;
        }
    }
    if (!c->pollfds) {
        c->pollfds = c->fixed_pollfds;
        c->poll_cap = 2;
    }
    size_t n = 0;
    c->pollfds[n++] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
    /* slot 1: the waker's eventfd, or -1 (poll ignores it) */
    c->pollfds[n++] = (struct pollfd){.fd = collector_waker_fd(c->waker), .events = POLLIN};
    for (size_t i = 0; i < c->nprocs && n < c->poll_cap; i++) {
        struct collector_process *p = c->procs[i];
        if (!p->writer || p->exited || p->pidfd < 0)
            continue;
        p->poll_slot = n;
        c->pollfds[n++] = (struct pollfd){.fd = p->pidfd, .events = POLLIN};
    }
    return n;
}

int collector_poll(struct collector *c, int timeout_ms)
{
    /* Rings are drained back to back while some ring came back more than
     * a quarter full (producers would soon wait on us). Between those,
     * drains follow the fastest ring: the bytes it held at the last drain
     * over the time since the drain before give its fill rate (averaged
     * over rounds), and the next drain comes before it is a quarter full
     * (never sooner than 100 us, never later than COLLECTOR_BUSY_NAP_NS
     * while anything is written, the caller's timeout when nothing is), so
     * a tight producer meets a drained ring instead of waiting. A producer
     * that finds its ring full anyway wakes us through the waker (collector_waker.c: a
     * futex word in its region, no descriptor in the app), which is what
     * lets naps be long; without it naps stop at COLLECTOR_UNWATCHED_NAP_MS.
     * A call that comes before the next drain is due only sleeps, accepts
     * registrations and notices exits: every drain costs the app CPU
     * (docs/benchmarks.md: nginx at saturation). One ppoll waits on the
     * listening socket, the waker and every live process's pidfd, so a
     * registration, a full ring or an exit ends the nap, and
     * accept4 is only called when a registration waits (a failed accept4
     * allocates and frees a socket inode: 13% of the collector's CPU on
     * nginx when it ran every round). */
    uint64_t now = collector_clock(CLOCK_MONOTONIC);
    if ((!c->waker_watches_all || !collector_waker_ok(c->waker)) &&
        timeout_ms > COLLECTOR_UNWATCHED_NAP_MS && c->nprocs)
        timeout_ms = COLLECTOR_UNWATCHED_NAP_MS;
    uint64_t timeout_ns = (uint64_t)timeout_ms * 1000000u;
    uint64_t wait_ns = timeout_ns;
    if (c->ring_pressure) {
        wait_ns = 0;
    } else if (c->nap_ns) {
        uint64_t since = now - c->round_start_ns;
        uint64_t due = since < c->nap_ns ? c->nap_ns - since : 0;
        if (due < wait_ns)
            wait_ns = due;
    }
    if (c->tsc_recalibrating) { /* wake for the next recalibration */
        uint64_t since = now - c->tsc_recalibrated_ns;
        uint64_t due = since < c->tsc_recal_interval_ns ? c->tsc_recal_interval_ns - since : 0;
        if (due < wait_ns)
            wait_ns = due;
    }
    size_t npoll = collector_poll_set(c);
    struct timespec nap = {.tv_sec = (time_t)(wait_ns / 1000000000u),
                           .tv_nsec = (long)(wait_ns % 1000000000u)};
    int ready = ppoll(c->pollfds, npoll, &nap, NULL);
    if (ready > 0 && (c->pollfds[0].revents & POLLIN))
        collector_accept_all(c);
    /* a producer waits for room: drain now, then let the words down */
    int woken = ready > 0 && (c->pollfds[1].revents & POLLIN) && collector_waker_consume(c->waker);
    if (woken)
        c->ring_pressure = 1;
    uint64_t round_start = collector_clock(CLOCK_MONOTONIC);
    int drain = c->ring_pressure || !c->nap_ns || round_start - c->round_start_ns >= c->nap_ns;
    if (drain) {
        if (c->round_start_ns && round_start > c->round_start_ns) {
            /* the fastest ring's fill rate, averaged with the previous
             * estimate (a round that finds the rings empty just after a
             * drain under pressure must not end the estimate: the next nap
             * would then be the whole timeout, and a tight producer would
             * fill its ring and wait on every lap) */
            double rate = (double)c->round_max_bytes / (double)(round_start - c->round_start_ns);
            c->fill_rate = (rate + c->fill_rate) / 2;
        }
        /* ns until the fastest ring holds a quarter of its room at that
         * rate, within [100 us, COLLECTOR_BUSY_NAP_NS] while anything is
         * being written; 0 when the estimate says nothing is (past the
         * caller's timeout): sleep the timeout, a burst wakes us through
         * the waker */
        double fill_ns = c->fill_rate > 0 ? (double)(TRACER_RING_DATA_BYTES / 4) / c->fill_rate
                                          : (double)timeout_ns;
        c->nap_ns = fill_ns < 100000.0                        ? 100000u
                    : fill_ns >= (double)timeout_ns           ? 0
                    : fill_ns > (double)COLLECTOR_BUSY_NAP_NS ? COLLECTOR_BUSY_NAP_NS
                                                              : (uint64_t)fill_ns;
        c->round_start_ns = round_start;
        c->round_max_bytes = 0;
        c->drained_records = 0;
        c->ring_pressure = 0;
    }
    if (c->tsc_recalibrating && round_start - c->tsc_recalibrated_ns >= c->tsc_recal_interval_ns) {
        /* keep the shared TSC conversion on CLOCK_MONOTONIC (NTP slews it);
         * the offset found is slewed away over the interval to the next */
        c->tsc_recal_interval_ns = c->tsc_recal_interval_ns * 2 < COLLECTOR_TSC_RECAL_NS
                                       ? c->tsc_recal_interval_ns * 2
                                       : COLLECTOR_TSC_RECAL_NS;
        struct cpuclock_table *t = collector_tsc_table(c);
        if (t && cpuclock_tsc_recalibrate(&t->header->tsc, c->tsc_recal_interval_ns) == 0) {
            uint64_t off =
                atomic_load_explicit(&t->header->tsc.last_offset_error_ns, memory_order_relaxed);
            if (off > CPUCLOCK_TSC_STEP_NS) {
                c->stats.clock_corrections++;
                if (off > c->stats.clock_worst_offset_ns)
                    c->stats.clock_worst_offset_ns = off;
            }
        }
        collector_note_tsc(c);
        c->tsc_recalibrated_ns = round_start;
    }
    int rc = 0;
    for (size_t i = 0; i < c->nprocs; i++) {
        struct collector_process *p = c->procs[i];
        if (!p->writer)
            continue;
        /* in the poll set, or registered during this call (not yet) */
        int gone = p->poll_slot && !p->exited ? ready > 0 && c->pollfds[p->poll_slot].revents != 0
                                              : collector_process_gone(p);
        p->poll_slot = 0;
        if (gone) {
            if (collector_close_process(c, p, 1) != 0)
                rc = -1;
            continue;
        }
        if (!drain)
            continue;
        for (int j = 0; j < p->nregions; j++)
            if (collector_drain_region(c, p, p->regions[j], 0, 0) != 0)
                rc = -1;
    }
    if (woken)
        collector_waker_rearm(c->waker);
    if (c->write_failed_pending) {
        c->write_failed_pending = 0;
        rc = -1;
    }
    return rc;
}

void collector_set_enabled(struct collector *c, int enabled)
{
    if (enabled && !c->enabled && (++c->window == 0 || c->window == TRACER_WINDOW_RESERVED))
        c->window = 1;
    c->enabled = enabled;
    /* TRACING_ON is dated before any process can see the switch, so no
     * event of the window precedes it; TRACING_OFF after every process
     * was told (only calls already under way then can follow it). */
    uint64_t ts = enabled ? collector_clock(CLOCK_MONOTONIC) : 0;
    for (size_t i = 0; i < c->nprocs; i++) {
        struct collector_process *p = c->procs[i];
        if (!p->writer)
            continue;
        for (int j = 0; j < p->nregions; j++)
            atomic_store(&tracer_region_control(p->regions[j]->base)->enabled,
                         enabled ? c->window : 0);
    }
    if (!enabled)
        ts = collector_clock(CLOCK_MONOTONIC);
    for (size_t i = 0; i < c->nprocs; i++) {
        struct collector_process *p = c->procs[i];
        if (!p->writer)
            continue;
        struct trace_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = TRACE_EV_CONTROL;
        ev.op = enabled ? TRACE_CTL_TRACING_ON : TRACE_CTL_TRACING_OFF;
        ev.ts_ns = ts;
        collector_append(c, p, &ev);
    }
}

int collector_enabled(const struct collector *c)
{
    return c->enabled;
}

void collector_stats(const struct collector *c, struct collector_stats *out)
{
    *out = c->stats;
    out->live = 0;
    uint64_t bytes = c->stats.bytes;
    for (size_t i = 0; i < c->nprocs; i++)
        if (c->procs[i]->writer) {
            out->live++;
            bytes += trace_writer_bytes(c->procs[i]->writer);
        }
    out->bytes = bytes;
}

const char *collector_error(const struct collector *c)
{
    return c->error;
}

const char *collector_tsc_note(const struct collector *c)
{
    return c->cpu_clock_bpf                                ? cpuclock_bpf_tsc_note()
           : c->clock_page_fd < 0 && c->clock_page_note[0] ? c->clock_page_note
                                                           : NULL;
}

const char *collector_cpu_clock_note(const struct collector *c)
{
    return c->cpu_clock_note[0] ? c->cpu_clock_note : NULL;
}

const char *collector_waker_note(const struct collector *c)
{
    return c->waker ? NULL : c->waker_note;
}

int collector_close_all(struct collector *c, char *err, size_t errlen)
{
    int rc = 0;
    /* Switch tracing off everywhere first, so processes that outlive us
     * stop writing instead of waiting for room that will never come. */
    for (size_t i = 0; i < c->nprocs; i++) {
        struct collector_process *p = c->procs[i];
        for (int j = 0; j < p->nregions; j++) {
            struct tracer_control *ctl = tracer_region_control(p->regions[j]->base);
            atomic_store(&ctl->enabled, 0);
            atomic_store(&ctl->drop_when_full, 1);
        }
    }
    collector_accept_all(c);
    for (size_t i = 0; i < c->nprocs; i++) {
        struct collector_process *p = c->procs[i];
        if (p->writer && collector_close_process(c, p, collector_process_gone(p)) != 0)
            rc = -1;
    }
    if (rc != 0 && err)
        snprintf(err, errlen, "%s", c->error);
    char cerr[512];
    uint64_t counters_bytes;
    int crc = collector_counters_stop(c->counters, &counters_bytes, cerr, sizeof cerr);
    c->stats.bytes += counters_bytes; /* what `record` says it wrote counts the file */
    if (crc != 0 && rc == 0) {
        rc = -1;
        if (err)
            snprintf(err, errlen, "%s", cerr);
    }
    c->counters = NULL;
    return rc;
}

int collector_finish(struct collector *c, char *err, size_t errlen)
{
    int rc = collector_close_all(c, err, errlen);
    for (size_t i = 0; i < c->nprocs; i++)
        free(c->procs[i]);
    close(c->listen_fd);
    collector_waker_stop(c->waker);
    if (c->cpu_clock_bpf)
        cpuclock_bpf_unload();
    else
        cpuclock_clock_page_free(&c->clock_page, c->clock_page_fd);
    free(c->procs);
    if (c->pollfds != c->fixed_pollfds)
        free(c->pollfds);
    free(c);
    return rc;
}

/* record_cli.c - `preplay record` (run a command under the tracer, acting
 * as its collector) and `preplay collect` (a standalone collector for apps
 * started elsewhere). `record` behaves like a good wrapper: the command
 * keeps our stdin/stdout/stderr, gets SIGINT/SIGTERM/SIGHUP forwarded, and
 * its exit status (128+N for death by signal N) becomes ours. Before the
 * app starts, both run the CPU benchmark kernels (cpu/cpu_kernels.h)
 * so every trace header carries this machine's CPU scores. */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "cpu_ratio.h"
#include "cpuclock.h"
#include "cpuclock_loader.h"
#include "label_rules.h"
#include "machine_counters.h"
#include "record_cli.h"
#include "shm_layout.h"

static volatile sig_atomic_t record_forward_signal;
static volatile sig_atomic_t record_stop_requested;
static volatile sig_atomic_t record_toggle_requested;

static void record_on_signal(int sig)
{
    record_forward_signal = sig;
    record_stop_requested++;
}

static void record_on_toggle(int sig)
{
    (void)sig;
    record_toggle_requested = 1;
}

/* Only there so the child's exit interrupts the collector's sleep (a child
 * that never registered has no pidfd in its poll set); waitpid tells. */
static void record_on_child(int sig)
{
    (void)sig;
}

/* The longest the main loops sleep in collector_poll: signals, the child's
 * exit and ring pressure cut it short (the collector caps it further when
 * a full ring could not wake it). */
#define RECORD_POLL_MS 100

/* Finds libpreplay_trace.so: $PREPLAY_TRACE_LIB, else the installed
 * layout relative to the running binary (bin/preplay beside
 * lib/preplay/libpreplay_trace.so), else the build tree (the library next
 * to the binary). The installed place comes first so an installed preplay
 * never preloads a stray library that happens to lie beside it. */
static int record_find_library(char *out, size_t cap)
{
    const char *env = getenv("PREPLAY_TRACE_LIB");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    const char *candidates[] = {"%s/../lib/preplay/libpreplay_trace.so", "%s/libpreplay_trace.so",
                                "%s/tracer/libpreplay_trace.so"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        snprintf(out, cap, candidates[i], exe);
        char real[PATH_MAX];
        if (access(out, R_OK) == 0 && realpath(out, real)) {
            snprintf(out, cap, "%s", real);
            return 0;
        }
    }
    return -1;
}

static int record_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    uint64_t mul = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1ull << 30;
        end++;
        break;
    default:
        break;
    }
    if (*end && strcmp(end, "B") && strcmp(end, "iB"))
        return -1;
    *out = (uint64_t)(v * (double)mul);
    return 0;
}

static int record_parse_only(const char *s, uint32_t *mask)
{
    *mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        uint32_t bit = 1;
        while (bit <= TRACER_ONLY_ALL && strcmp(tok, tracer_family_name(bit)))
            bit <<= 1;
        if (bit > TRACER_ONLY_ALL)
            return -1;
        *mask |= bit;
    }
    return *mask ? 0 : -1;
}

struct record_common {
    struct collector_options copt;
    const char *out_dir;
    int quiet;
    int no_cpu_scores;
    struct trace_cpu_score cpu_scores[TRACE_MAX_CPU_SCORES];
};

static const char record_common_help[] =
    "  -o, --output DIR      trace directory (default: preplay-trace)\n"
    "      --only LIST       trace only these families: file,net,lock,db,cpu\n"
    "      --path-prefix P   trace only files whose path starts with P\n"
    "      --port PORT       trace only TCP/UDP traffic with PORT as its local or peer\n"
    "                        port (repeatable, at most 16; AF_UNIX is always traced)\n"
    "      --db-port PORT    peer port of a MySQL/MariaDB server (repeatable; default 3306)\n"
    "      --db-socket SUF   AF_UNIX DB sockets end in SUF (default mysqld.sock)\n"
    "      --db-max-statement SIZE\n"
    "                        keep DB statements and their parameters whole up to\n"
    "                        SIZE (default 1M, 64 to 32M); longer ones are marked cut\n"
    "      --keep-query      keep the query string in HTTP request labels\n"
    "      --label NAME=REGEX  label requests whose \"METHOD /path?query\" matches\n"
    "                        the POSIX extended REGEX as NAME (repeatable, first\n"
    "                        match wins; others keep \"METHOD /path\")\n"
    "      --label-file FILE read --label rules from FILE, one NAME=REGEX a line\n"
    "      --drop            when buffers fill, count and mark lost events instead of\n"
    "                        making the app wait (default: lossless back-pressure)\n"
    "      --max-size SIZE   keep each trace within SIZE (e.g. 500M), dropping the\n"
    "                        oldest chunks (the dropped span is marked)\n"
    "      --stacks N        record up to N (1-32) stack frames per non-CPU event\n"
    "      --no-lock-folding record every mutex and rwlock operation (default: a lock\n"
    "                        is counted, not recorded, until it is contended)\n"
    "      --off             start with tracing switched off (SIGUSR1 toggles)\n"
    "      --no-cpu-scores   do not run the CPU benchmark kernels (~2 s) first\n"
    "      --ring-clock C    what times the records: auto (the TSC when the kernel\n"
    "                        keeps time with it), tsc (also when it does not, if the\n"
    "                        TSC is invariant), monotonic (clock_gettime)\n"
    "      --cpu-clock C     how threads measure CPU time: gap (default: the thread\n"
    "                        CPU clock read after each switch; without rseq only\n"
    "                        after a wall gap over 20 us, shorter gaps charged as\n"
    "                        wall time; gap:US sets the gap, 1-1000),\n"
    "                        bpf (a sched_switch program, exact, costs every context\n"
    "                        switch of the machine; needs root), thread (the clock\n"
    "                        read at every event: exact, a syscall each)\n"
    "      --allow-uid USER  processes of USER (a name or a uid) may register too\n"
    "                        (repeatable, at most 16; root and this user always may)\n"
    "      --window T        counters per window of T (default 10s; 0: none): CPU,\n"
    "                        run queue, disks, network, the traced processes' CPU,\n"
    "                        into DIR/machine-PID.counters, for preplay regress\n"
    "  -q, --quiet           no progress line\n";

enum {
    OPT_ONLY = 1000,
    OPT_PATH,
    OPT_DBPORT,
    OPT_DBSOCK,
    OPT_KEEPQ,
    OPT_NOFOLD,
    OPT_DROP,
    OPT_MAXSIZE,
    OPT_STACKS,
    OPT_OFF,
    OPT_NAME,
    OPT_NOCPU,
    OPT_RINGCLOCK,
    OPT_PORT,
    OPT_LABEL,
    OPT_LABELFILE,
    OPT_DBMAX,
    OPT_ALLOWUID,
    OPT_CPUCLOCK,
    OPT_WINDOW
};

static const struct option record_long_options[] = {
    {"output", required_argument, 0, 'o'},
    {"component", required_argument, 0, 'c'},
    {"only", required_argument, 0, OPT_ONLY},
    {"path-prefix", required_argument, 0, OPT_PATH},
    {"port", required_argument, 0, OPT_PORT},
    {"db-port", required_argument, 0, OPT_DBPORT},
    {"db-socket", required_argument, 0, OPT_DBSOCK},
    {"db-max-statement", required_argument, 0, OPT_DBMAX},
    {"keep-query", no_argument, 0, OPT_KEEPQ},
    {"no-lock-folding", no_argument, 0, OPT_NOFOLD},
    {"label", required_argument, 0, OPT_LABEL},
    {"label-file", required_argument, 0, OPT_LABELFILE},
    {"drop", no_argument, 0, OPT_DROP},
    {"max-size", required_argument, 0, OPT_MAXSIZE},
    {"stacks", required_argument, 0, OPT_STACKS},
    {"off", no_argument, 0, OPT_OFF},
    {"name", required_argument, 0, OPT_NAME},
    {"no-cpu-scores", no_argument, 0, OPT_NOCPU},
    {"ring-clock", required_argument, 0, OPT_RINGCLOCK},
    {"cpu-clock", required_argument, 0, OPT_CPUCLOCK},
    {"allow-uid", required_argument, 0, OPT_ALLOWUID},
    {"window", required_argument, 0, OPT_WINDOW},
    {"quiet", no_argument, 0, 'q'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* --cpu-clock gap[:US] | bpf | thread into the collector's options; 0, or
 * -1 after saying what is wrong. */
static int record_parse_cpu_clock(struct collector_options *o, const char *arg, const char *cmd)
{
    o->cpu_gap_ns = 0;
    if (!strcmp(arg, "bpf")) {
        o->cpu_clock = TRACER_CPU_CLOCK_BPF;
        return 0;
    }
    if (!strcmp(arg, "thread")) {
        o->cpu_clock = TRACER_CPU_CLOCK_THREAD;
        return 0;
    }
    o->cpu_clock = TRACER_CPU_CLOCK_GAP;
    if (!strcmp(arg, "gap"))
        return 0;
    if (!strncmp(arg, "gap:", 4)) {
        char *end;
        errno = 0;
        unsigned long us = strtoul(arg + 4, &end, 10);
        if (errno == 0 && end != arg + 4 && !*end && arg[4] != '-' && us >= 1 &&
            us <= TRACER_CPU_GAP_MAX_NS / 1000) {
            o->cpu_gap_ns = (uint32_t)us * 1000u;
            return 0;
        }
    }
    fprintf(stderr,
            "preplay %s: --cpu-clock takes gap, gap:US (US 1 to %u), bpf or thread (got '%s')\n",
            cmd, TRACER_CPU_GAP_MAX_NS / 1000, arg);
    return -1;
}

/* --ring-clock (OPT_RINGCLOCK), --cpu-clock (OPT_CPUCLOCK) or the
 * counters' --window (OPT_WINDOW, run's grammar and bounds) `arg` into the
 * collector's options; 0, or -1 after saying what is wrong. */
static int record_parse_clock(struct collector_options *o, int opt, const char *arg,
                              const char *cmd)
{
    if (opt == OPT_CPUCLOCK)
        return record_parse_cpu_clock(o, arg, cmd);
    if (opt == OPT_WINDOW) {
        if (!counters_parse_window(arg, &o->window_s))
            return 0;
        fprintf(stderr,
                "preplay %s: --window '%s': expected 0 (no counters) or 0.1s..24h, e.g. 10s\n", cmd,
                arg);
        return -1;
    }
    if (!strcmp(arg, "auto")) {
        o->ring_clock = CPUCLOCK_TSC_AUTO;
    } else if (!strcmp(arg, "tsc")) {
        o->ring_clock = CPUCLOCK_TSC_FORCE;
    } else if (!strcmp(arg, "monotonic")) {
        o->ring_clock = CPUCLOCK_TSC_NEVER;
    } else {
        fprintf(stderr, "preplay %s: --ring-clock takes auto, tsc or monotonic (got '%s')\n", cmd,
                arg);
        return -1;
    }
    return 0;
}

/* The --label rules of this command (the collector's options point to
 * them): freed when the command returns. */
static struct label_rules *record_label_rules;

/* Adds the rule (--label) or the file's rules (--label-file) `arg`; 0, or
 * 2 after saying which rule is wrong. */
static int record_add_labels(struct record_common *rc, int opt, const char *arg, const char *cmd)
{
    char err[640];
    if (!record_label_rules && !(record_label_rules = label_rules_new())) {
        fprintf(stderr, "preplay %s: out of memory\n", cmd);
        return 2;
    }
    int bad = opt == OPT_LABEL ? label_rules_add(record_label_rules, arg, err, sizeof err)
                               : label_rules_add_file(record_label_rules, arg, err, sizeof err);
    if (bad) {
        fprintf(stderr, "preplay %s: %s %s\n", cmd, opt == OPT_LABEL ? "--label" : "--label-file",
                err);
        return 2;
    }
    rc->copt.label_rules = record_label_rules;
    return 0;
}

/* A repeatable option: --label, --label-file or --allow-uid USER (a user
 * name, or a number). 0, or 2 after saying what is wrong. */
static int record_add_repeated(struct record_common *rc, int opt, const char *arg, const char *cmd)
{
    if (opt != OPT_ALLOWUID)
        return record_add_labels(rc, opt, arg, cmd);
    struct passwd *pw = getpwnam(arg);
    char *end = NULL;
    unsigned long uid = pw ? pw->pw_uid : strtoul(arg, &end, 10);
    if ((!pw && (!*arg || *end || uid > 0xfffffffeul)) || rc->copt.nallow_uids >= 16) {
        fprintf(stderr, "preplay %s: bad --allow-uid '%s' (a user name or uid, at most 16)\n", cmd,
                arg);
        return 2;
    }
    rc->copt.allow_uids[rc->copt.nallow_uids++] = (uint32_t)uid;
    return 0;
}

/* Parses the options both commands share; returns 0, 1 (help shown) or 2. */
static int record_parse(int argc, char **argv, struct record_common *rc, const char **component,
                        const char **name, const char *usage, const char *cmd)
{
    memset(rc, 0, sizeof *rc);
    rc->out_dir = "preplay-trace";
    rc->copt.window_s = 10; /* as run's default: a recording and a run compare */
    rc->copt.only_mask = TRACER_ONLY_ALL;
    rc->copt.db_socket_suffix = COLLECTOR_DEFAULT_DB_SOCKET;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "+o:c:qh", record_long_options, NULL)) != -1) {
        switch (opt) {
        case 'o':
            rc->out_dir = optarg;
            break;
        case 'c':
            if (!component)
                goto bad;
            *component = optarg;
            break;
        case 'q':
            rc->quiet = 1;
            break;
        case OPT_ONLY:
            if (record_parse_only(optarg, &rc->copt.only_mask)) {
                fprintf(stderr, "preplay %s: --only takes file,net,lock,db,cpu (got '%s')\n", cmd,
                        optarg);
                return 2;
            }
            break;
        case OPT_PATH:
            rc->copt.path_prefix = optarg;
            break;
        case OPT_DBPORT: {
            char *end;
            long port = strtol(optarg, &end, 10);
            if (*end || port <= 0 || port > 65535 || rc->copt.ndb_ports >= 8) {
                fprintf(stderr, "preplay %s: bad --db-port '%s' (1-65535, at most 8)\n", cmd,
                        optarg);
                return 2;
            }
            rc->copt.db_ports[rc->copt.ndb_ports++] = (uint16_t)port;
            break;
        }
        case OPT_PORT: {
            char *end;
            long port = strtol(optarg, &end, 10);
            if (*end || port <= 0 || port > 65535 ||
                rc->copt.nnet_ports >= sizeof rc->copt.net_ports / sizeof rc->copt.net_ports[0]) {
                fprintf(stderr, "preplay %s: bad --port '%s' (1-65535, at most 16)\n", cmd, optarg);
                return 2;
            }
            rc->copt.net_ports[rc->copt.nnet_ports++] = (uint16_t)port;
            break;
        }
        case OPT_DBSOCK:
            rc->copt.db_socket_suffix = optarg;
            break;
        case OPT_DBMAX: {
            uint64_t v;
            if (record_parse_size(optarg, &v) || v < TRACER_DB_STATEMENT_MIN ||
                v > TRACER_DB_STATEMENT_MAX) {
                fprintf(stderr,
                        "preplay %s: bad --db-max-statement '%s' (bytes, e.g. 1M; 64 to 32M)\n",
                        cmd, optarg);
                return 2;
            }
            rc->copt.db_max_statement = (uint32_t)v;
            break;
        }
        case OPT_KEEPQ:
            rc->copt.keep_query = 1;
            break;
        case OPT_NOFOLD:
            rc->copt.no_lock_folding = 1;
            break;
        case OPT_LABEL:
        case OPT_LABELFILE:
        case OPT_ALLOWUID:
            if (record_add_repeated(rc, opt, optarg, cmd))
                return 2;
            break;
        case OPT_DROP:
            rc->copt.drop_when_full = 1;
            break;
        case OPT_MAXSIZE:
            if (record_parse_size(optarg, &rc->copt.max_bytes) || rc->copt.max_bytes < (1 << 20)) {
                fprintf(stderr, "preplay %s: bad --max-size '%s' (e.g. 64M; at least 1M)\n", cmd,
                        optarg);
                return 2;
            }
            break;
        case OPT_STACKS: {
#ifdef PREPLAY_HAVE_LIBUNWIND
            char *end;
            long depth = strtol(optarg, &end, 10);
            if (*end || depth < 1 || depth > 32) {
                fprintf(stderr, "preplay %s: bad --stacks '%s' (frames per event, 1-32)\n", cmd,
                        optarg);
                return 2;
            }
            rc->copt.stack_depth = (uint32_t)depth;
            break;
#else
            fprintf(stderr,
                    "preplay %s: --stacks needs libunwind, which this build lacks "
                    "(apt-get install libunwind-dev and rebuild)\n",
                    cmd);
            return 2;
#endif
        }
        case OPT_OFF:
            rc->copt.start_disabled = 1;
            break;
        case OPT_NOCPU:
            rc->no_cpu_scores = 1;
            break;
        case OPT_RINGCLOCK:
        case OPT_CPUCLOCK:
        case OPT_WINDOW:
            if (record_parse_clock(&rc->copt, opt, optarg, cmd) != 0)
                return 2;
            break;
        case OPT_NAME:
            if (!name)
                goto bad;
            *name = optarg;
            break;
        case 'h':
            printf("%s%s", usage, record_common_help);
            return 1;
        default:
            goto bad;
        }
    }
    if (!rc->copt.ndb_ports)
        rc->copt.db_ports[rc->copt.ndb_ports++] = COLLECTOR_DEFAULT_DB_PORT;
    rc->copt.out_dir = rc->out_dir;
    return 0;
bad:
    fprintf(stderr, "%s", usage);
    return 2;
}

/* bytes as people read sizes: "75.3 KB", "12.0 MB", "3.41 GB" (powers of
 * 1000, like the rest of preplay's messages); buf has room for 32 */
static const char *record_size_text(uint64_t bytes, char *buf, size_t cap)
{
    if (bytes < 1000)
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
    else if (bytes < 1000000)
        snprintf(buf, cap, "%.1f KB", (double)bytes / 1e3);
    else if (bytes < 1000000000)
        snprintf(buf, cap, "%.1f MB", (double)bytes / 1e6);
    else
        snprintf(buf, cap, "%.2f GB", (double)bytes / 1e9);
    return buf;
}

static void record_progress(struct collector *c, int tty, double started)
{
    if (!tty)
        return;
    struct collector_stats s;
    collector_stats(c, &s);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    char size[32];
    fprintf(stderr, "\rpreplay: %.0fs  %u processes (%u live)  %llu events  %s  %llu lost%s ",
            now - started, s.processes, s.live, (unsigned long long)s.events,
            record_size_text(s.bytes, size, sizeof size), (unsigned long long)s.lost,
            collector_enabled(c) ? "" : "  [tracing off]");
}

/* What the collector runs without, said once at the start (not with -q). */
static void record_collector_notes(struct collector *c, int quiet, const char *cmd)
{
    if (quiet)
        return;
    const char *note = collector_cpu_clock_note(c);
    if (note)
        fprintf(stderr,
                "preplay %s: --cpu-clock bpf is not available (%s): CPU time per thread "
                "uses the gap clock; see docs/cpu-time.md\n",
                cmd, note);
    note = collector_tsc_note(c);
    if (note)
        fprintf(stderr,
                "preplay %s: records are timed with clock_gettime, not the TSC (%s); see "
                "docs/cpu-time.md\n",
                cmd, note);
    note = collector_waker_note(c);
    if (note)
        fprintf(stderr,
                "preplay %s: a full buffer cannot wake the collector (%s): it drains every "
                "%d ms instead; see docs/tracer.md\n",
                cmd, note, COLLECTOR_UNWATCHED_NAP_MS);
}

/* Scores this machine's CPU before the app starts (it would disturb the
 * app otherwise); a failure costs the scores, never the recording. */
static void record_cpu_scores(struct record_common *rc, const char *cmd)
{
    if (rc->no_cpu_scores)
        return;
    char err[256];
    int n = cpu_ratio_record(rc->cpu_scores, TRACE_MAX_CPU_SCORES, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "preplay %s: CPU scores not recorded: %s\n", cmd, err);
        return;
    }
    rc->copt.cpu_scores = rc->cpu_scores;
    rc->copt.ncpu_scores = (uint32_t)n;
}

static double record_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void record_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = record_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = record_on_toggle;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = record_on_child;
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
}

static void record_summary(const char *dir, struct collector *c, int quiet)
{
    struct collector_stats s;
    collector_stats(c, &s);
    if (s.untraced) /* data missing: said even with -q */
        fprintf(stderr,
                "preplay: %u process(es) ran untraced: the collector did not answer their "
                "registration within %d s (was it stopped or overloaded?)\n",
                s.untraced, TRACER_COLLECTOR_PATIENCE_MS / 1000);
    if (s.unmapped) /* data missing: said even with -q */
        fprintf(stderr,
                "preplay: %u process image(s) could not map their trace buffers (up to %llu MiB "
                "of address space: is RLIMIT_AS set?) and ran untraced, e.g. %s\n",
                s.unmapped, (unsigned long long)(TRACER_REGION_BYTES >> 20), s.unmapped_trace);
    if (s.fewer_rings && !quiet)
        fprintf(stderr,
                "preplay: %u process image(s) had room for fewer trace buffers (RLIMIT_AS): at "
                "most 16 to 256 of their threads are traced at once, e.g. %s\n",
                s.fewer_rings, s.fewer_rings_trace);
    if (s.clock_corrections) /* timing is off near them: said even with -q */
        fprintf(stderr,
                "preplay: %u time(s) the traces' TSC clock was found more than %u ms off "
                "CLOCK_MONOTONIC (up to %.1f ms: a paused VM or a clock step?); event times "
                "around then are off by up to that much, never out of order\n",
                s.clock_corrections, CPUCLOCK_TSC_STEP_NS / 1000000u,
                (double)s.clock_worst_offset_ns / 1e6);
    if (s.refused) /* data missing: said even with -q */
        fprintf(stderr,
                "preplay: %u registration(s) refused and run untraced: uid %u may not register "
                "(only root, this user and --allow-uid users; docs/preplay-record.md)\n",
                s.refused, s.refused_uid);
    if (quiet)
        return;
    char size[32];
    fprintf(stderr, "preplay: %llu events from %u processes in %s (%s)%s\n",
            (unsigned long long)s.events, s.processes, dir,
            record_size_text(s.bytes, size, sizeof size),
            s.lost ? " - some events were lost, see preplay info" : "");
}

static int record_command(int argc, char **argv)
{
    static const char usage[] =
        "usage: preplay record [-o DIR] [-c COMPONENT] [options] -- CMD [ARGS...]\n"
        "Runs CMD with the tracer preloaded and writes one trace file per process\n"
        "into DIR. CMD keeps stdin/stdout/stderr; SIGINT/SIGTERM/SIGHUP are\n"
        "forwarded to it; its exit status is returned. SIGUSR1 to preplay toggles\n"
        "tracing on and off.\n\n"
        "  -c, --component NAME  name of this tier (e.g. frontend) in the traces\n";
    struct record_common rc;
    const char *component = NULL;
    int pr = record_parse(argc, argv, &rc, &component, NULL, usage, "record");
    if (pr)
        return pr == 1 ? 0 : 2;
    if (optind >= argc) {
        fprintf(stderr, "preplay record: no command given (preplay record [options] -- CMD)\n");
        return 2;
    }
    char lib[PATH_MAX];
    if (record_find_library(lib, sizeof lib) != 0) {
        const char *env = getenv("PREPLAY_TRACE_LIB");
        if (env && *env)
            fprintf(stderr, "preplay record: PREPLAY_TRACE_LIB=%s: cannot read it\n", env);
        else
            fprintf(stderr, "preplay record: cannot find libpreplay_trace.so in ../lib/preplay/ "
                            "beside the preplay binary nor next to it (set PREPLAY_TRACE_LIB)\n");
        return 1;
    }
    char name[64];
    snprintf(name, sizeof name, "rec-%d-%ld", (int)getpid(), (long)time(NULL));
    rc.copt.name = name;
    rc.copt.accept_descendants = 1; /* the command may become another user */
    record_cpu_scores(&rc, "record");
    char err[512];
    struct collector *c = collector_create(&rc.copt, err, sizeof err);
    if (!c) {
        fprintf(stderr, "preplay record: %s\n", err);
        return 1;
    }
    record_collector_notes(c, rc.quiet, "record");

    /* The child gets our variables; LD_PRELOAD keeps what was there. */
    const char *old = getenv("LD_PRELOAD");
    char preload[PATH_MAX * 2];
    if (old && *old)
        snprintf(preload, sizeof preload, "%s:%s", lib, old);
    else
        snprintf(preload, sizeof preload, "%s", lib);

    record_install_signals();
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "preplay record: fork: %s\n", strerror(errno));
        collector_finish(c, NULL, 0);
        return 1;
    }
    if (child == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL);
        setenv("LD_PRELOAD", preload, 1);
        setenv("PREPLAY_COLLECTOR", name, 1);
        if (component)
            setenv("PREPLAY_COMPONENT", component, 1);
        else
            unsetenv("PREPLAY_COMPONENT");
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "preplay record: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }

    int tty = !rc.quiet && isatty(2);
    double started = record_now(), last_progress = 0;
    int status = 0, child_done = 0, failed = 0;
    unsigned handled_stops = 0;
    for (;;) {
        if (collector_poll(c, RECORD_POLL_MS) != 0 && !failed) {
            fprintf(stderr, "\npreplay record: %s\n", collector_error(c));
            failed = 1;
        }
        if (record_toggle_requested) {
            record_toggle_requested = 0;
            collector_set_enabled(c, !collector_enabled(c));
        }
        if (record_stop_requested != (sig_atomic_t)handled_stops) {
            handled_stops = (unsigned)record_stop_requested;
            if (!child_done)
                kill(child, record_forward_signal);
            else
                break; /* only daemons left: a signal ends the recording */
        }
        if (!child_done) {
            pid_t w = waitpid(child, &status, WNOHANG);
            if (w == child)
                child_done = 1;
        }
        if (child_done) {
            struct collector_stats s;
            collector_stats(c, &s);
            if (s.live == 0)
                break;
        }
        double now = record_now();
        if (tty && now - last_progress > 0.5) {
            record_progress(c, tty, started);
            last_progress = now;
        }
    }
    if (tty)
        fprintf(stderr, "\r\033[K");
    int closed = collector_close_all(c, err, sizeof err); /* the summary's sizes are final */
    record_summary(rc.out_dir, c, rc.quiet);
    if (collector_finish(c, closed ? NULL : err, sizeof err) != 0 || closed != 0) {
        fprintf(stderr, "preplay record: %s\n", err);
        failed = 1;
    }
    if (failed)
        return 1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

static int collect_command(int argc, char **argv)
{
    static const char usage[] =
        "usage: preplay collect [-o DIR] [--name NAME] [options]\n"
        "Runs a standalone collector for applications started elsewhere (systemd,\n"
        "apache2, php-fpm). Start them with\n"
        "  LD_PRELOAD=/path/to/libpreplay_trace.so PREPLAY_COLLECTOR=NAME\n"
        "  [PREPLAY_COMPONENT=TIER]\n"
        "Stops on SIGINT/SIGTERM and completes every trace. SIGUSR1 toggles\n"
        "tracing on and off.\n\n"
        "      --name NAME       collector name (default: default)\n";
    struct record_common rc;
    const char *name = "default";
    int pr = record_parse(argc, argv, &rc, NULL, &name, usage, "collect");
    if (pr)
        return pr == 1 ? 0 : 2;
    if (optind < argc) {
        fprintf(stderr, "preplay collect: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    rc.copt.name = name;
    record_cpu_scores(&rc, "collect");
    char err[512];
    struct collector *c = collector_create(&rc.copt, err, sizeof err);
    if (!c) {
        fprintf(stderr, "preplay collect: %s\n", err);
        return 1;
    }
    char lib[PATH_MAX];
    if (!rc.quiet)
        fprintf(stderr,
                "preplay collect: listening as '%s'; start the app with\n"
                "  LD_PRELOAD=%s PREPLAY_COLLECTOR=%s\n",
                name, record_find_library(lib, sizeof lib) == 0 ? lib : "libpreplay_trace.so",
                name);
    record_collector_notes(c, rc.quiet, "collect");
    record_install_signals();
    int tty = !rc.quiet && isatty(2);
    double started = record_now(), last_progress = 0;
    int failed = 0;
    while (!record_stop_requested) {
        if (collector_poll(c, RECORD_POLL_MS) != 0 && !failed) {
            fprintf(stderr, "\npreplay collect: %s\n", collector_error(c));
            failed = 1;
        }
        if (record_toggle_requested) {
            record_toggle_requested = 0;
            collector_set_enabled(c, !collector_enabled(c));
        }
        double now = record_now();
        if (tty && now - last_progress > 0.5) {
            record_progress(c, tty, started);
            last_progress = now;
        }
    }
    if (tty)
        fprintf(stderr, "\r\033[K");
    int closed = collector_close_all(c, err, sizeof err); /* the summary's sizes are final */
    record_summary(rc.out_dir, c, rc.quiet);
    if (collector_finish(c, closed ? NULL : err, sizeof err) != 0 || closed != 0) {
        fprintf(stderr, "preplay collect: %s\n", err);
        return 1;
    }
    return failed ? 1 : 0;
}

int cmd_record(int argc, char **argv)
{
    int rc = record_command(argc, argv);
    label_rules_free(record_label_rules);
    record_label_rules = NULL;
    return rc;
}

int cmd_collect(int argc, char **argv)
{
    int rc = collect_command(argc, argv);
    label_rules_free(record_label_rules);
    record_label_rules = NULL;
    return rc;
}

/* trace_gen.c - writes known traces through the trace writer, for the
 * `preplay info`/`dump` script test and the reader fuzzer's seed corpus.
 *   trace_gen dir DIR    two processes with exactly the events counted in
 *                        test_trace_cli.sh (keep the two in sync)
 *   trace_gen seeds DIR  small seed files for fuzz_trace_reader
 *   trace_gen big-strings FILE N LEN  a hostile trace: N distinct STRINGs
 *                        of LEN zero bytes (256 16777216: a 4 GiB string
 *                        table in ~130 KB), for measuring readers
 *   trace_gen big-stacks FILE N  N distinct STACKs of 4096 frames
 *   trace_gen many FILE KIND N  N distinct tids, conns, fds or locks
 *                        (trace_test_write_many), for analyze's and
 *                        info's tables
 * It never writes outside DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "trace_file.h"
#include "trace_test_events.h"

static struct trace_writer *gen_open(const char *dir, const char *name, uint32_t pid,
                                     const char *component, const struct trace_writer_options *o)
{
    char path[4096], err[512];
    struct trace_header h;
    trace_test_header(&h, pid, component);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct trace_writer *w = trace_writer_open(path, &h, o, err, sizeof err);
    if (!w) {
        fprintf(stderr, "trace_gen: %s\n", err);
        exit(1);
    }
    return w;
}

static void gen_put(struct trace_writer *w, struct trace_event *ev)
{
    if (trace_writer_append(w, ev) != 0) {
        fprintf(stderr, "trace_gen: %s\n", trace_writer_error(w));
        exit(1);
    }
}

static void gen_close(struct trace_writer *w)
{
    char err[512];
    if (trace_writer_close(w, err, sizeof err) != 0) {
        fprintf(stderr, "trace_gen: %s\n", err);
        exit(1);
    }
}

static uint64_t gen_clock = 1000000000ULL;

static struct trace_event *gen_ev(struct trace_event *ev, uint8_t type, uint8_t op, uint32_t tid,
                                  uint64_t dur)
{
    memset(ev, 0, sizeof *ev);
    ev->type = type;
    ev->op = op;
    ev->tid = tid;
    ev->ts_ns = gen_clock;
    ev->dur_ns = dur;
    gen_clock += dur + 1000;
    return ev;
}

static void gen_string(struct trace_writer *w, uint32_t id, const char *s)
{
    struct trace_event ev;
    gen_ev(&ev, TRACE_EV_STRING, 0, 1000, 0);
    ev.u.string.id = id;
    ev.u.string.len = (uint32_t)strlen(s);
    ev.data = s;
    gen_put(w, &ev);
}

/* frontend-100.trace: see test_trace_cli.sh for the expected counts. */
static void gen_frontend(const char *dir)
{
    struct trace_writer_options o = {.frame_bytes = 1024};
    struct trace_writer *w = gen_open(dir, "frontend-100.trace", 100, "frontend", &o);
    struct trace_event ev, *e;
    for (uint32_t t = 1000; t <= 1001; t++) {
        e = gen_ev(&ev, TRACE_EV_THREAD_START, 0, t, 0);
        e->u.thread.parent_tid = t == 1001 ? 1000 : 0;
        gen_put(w, e);
    }
    gen_string(w, 1, "/srv/data.bin");
    gen_string(w, 2, "SELECT name FROM users WHERE id = 1");
    gen_string(w, 3, "GET /cart");
    e = gen_ev(&ev, TRACE_EV_FILE, TRACE_FILE_OPEN, 1000, 5000);
    e->u.file = (struct trace_file_event){.fd = 5,
                                          .path_id = 1,
                                          .dev = 2049,
                                          .ino = 777,
                                          .offset = -1,
                                          .result = 5,
                                          .open_flags = 0102,
                                          .fd2 = -1};
    gen_put(w, e);
    for (int i = 0; i < 15; i++) {
        int wr = i < 10;
        e = gen_ev(&ev, TRACE_EV_FILE, wr ? TRACE_FILE_WRITE : TRACE_FILE_PREAD, 1000 + i % 2,
                   2000);
        e->u.file = (struct trace_file_event){.fd = 5,
                                              .dev = 2049,
                                              .ino = 777,
                                              .offset = wr ? 100 * i : 50 * (i - 10),
                                              .size = wr ? 100 : 50,
                                              .result = wr ? 100 : 50,
                                              .file_size = wr ? 100u * i : 1000,
                                              .fd2 = -1};
        gen_put(w, e);
    }
    e = gen_ev(&ev, TRACE_EV_FILE, TRACE_FILE_CLOSE, 1000, 1000);
    e->u.file = (struct trace_file_event){
        .fd = 5, .dev = 2049, .ino = 777, .offset = -1, .file_size = 1000, .fd2 = -1};
    gen_put(w, e);
    e = gen_ev(&ev, TRACE_EV_CONN, TRACE_CONN_ACCEPT, 1001, 3000);
    e->u.conn = (struct trace_conn_event){.fd = 7,
                                          .proto = TRACE_PROTO_TCP,
                                          .family = AF_INET,
                                          .local_port = 8080,
                                          .remote_port = 40000,
                                          .conn_id = 1,
                                          .result = 7};
    memcpy(e->u.conn.local_addr, "\x7f\0\0\x01", 4);
    memcpy(e->u.conn.remote_addr, "\x7f\0\0\x01", 4);
    gen_put(w, e);
    e = gen_ev(&ev, TRACE_EV_LABEL, 0, 1001, 0);
    e->u.label.conn_id = 1;
    e->u.label.label_id = 3;
    gen_put(w, e);
    for (int i = 0; i < 8; i++) {
        int send = i % 2;
        e = gen_ev(&ev, TRACE_EV_NET, send ? TRACE_NET_SEND : TRACE_NET_RECV, 1001, 4000);
        e->u.net = (struct trace_net_event){
            .fd = 7, .conn_id = 1, .size = send ? 1000 : 4096, .result = send ? 1000 : 300};
        gen_put(w, e);
    }
    e = gen_ev(&ev, TRACE_EV_CONN, TRACE_CONN_CLOSE, 1001, 1000);
    e->u.conn.fd = 7;
    e->u.conn.conn_id = 1;
    gen_put(w, e);
    for (int i = 0; i < 6; i++) {
        e = gen_ev(&ev, TRACE_EV_LOCK, TRACE_LOCK_ACQUIRE, 1000 + i % 2, 1000);
        e->u.lock = (struct trace_lock_event){
            .kind = TRACE_LOCK_MUTEX, .mode = TRACE_LOCK_EXCLUSIVE, .lock_id = 0xabc0};
        gen_put(w, e);
        e = gen_ev(&ev, TRACE_EV_LOCK, TRACE_LOCK_RELEASE, 1000 + i % 2, 100);
        e->u.lock = (struct trace_lock_event){
            .kind = TRACE_LOCK_MUTEX, .mode = TRACE_LOCK_EXCLUSIVE, .lock_id = 0xabc0};
        gen_put(w, e);
    }
    for (int i = 0; i < 20; i++)
        gen_put(w, gen_ev(&ev, TRACE_EV_CPU, 0, 1000 + i % 2, 10000));
    for (int i = 0; i < 3; i++) {
        e = gen_ev(&ev, TRACE_EV_DB, TRACE_DB_QUERY, 1000, 50000);
        e->u.db = (struct trace_db_event){
            .source = TRACE_DB_CAPI, .db_conn_id = 1, .query_id = 2, .rows = 2, .bytes = 64};
        gen_put(w, e);
    }
    e = gen_ev(&ev, TRACE_EV_LOSS, 0, 1000, 0);
    e->u.loss = (struct trace_loss_event){
        .count = 7, .from_ns = 1, .to_ns = 2, .reason = TRACE_LOSS_BUFFER_FULL};
    gen_put(w, e);
    for (uint32_t t = 1000; t <= 1001; t++)
        gen_put(w, gen_ev(&ev, TRACE_EV_THREAD_EXIT, 0, t, 0));
    gen_close(w);
}

/* backend-101.trace: one thread, a unix socket, CPU. */
static void gen_backend(const char *dir)
{
    struct trace_writer *w = gen_open(dir, "backend-101.trace", 101, "backend", NULL);
    struct trace_event ev, *e;
    gen_put(w, gen_ev(&ev, TRACE_EV_THREAD_START, 0, 2000, 0));
    e = gen_ev(&ev, TRACE_EV_CONN, TRACE_CONN_CONNECT, 2000, 2000);
    e->u.conn = (struct trace_conn_event){.fd = 4,
                                          .proto = TRACE_PROTO_UNIX_STREAM,
                                          .family = AF_UNIX,
                                          .conn_id = 1,
                                          .unix_inode = 5555,
                                          .unix_peer_inode = 6666};
    gen_put(w, e);
    for (int i = 0; i < 4; i++)
        gen_put(w, gen_ev(&ev, TRACE_EV_CPU, 0, 2000, 3000));
    /* the fifth slice fills the gap before the first send, as the collector
     * writes it: one record (format 2.0, FORMAT.md §6.4) */
    struct trace_event cpu = ev;
    cpu.ts_ns = ev.ts_ns + ev.dur_ns;
    gen_clock = cpu.ts_ns + cpu.dur_ns;
    for (int i = 0; i < 2; i++) {
        e = gen_ev(&ev, TRACE_EV_NET, TRACE_NET_SEND, 2000, 1000);
        e->u.net = (struct trace_net_event){.fd = 4, .conn_id = 1, .size = 10, .result = 10};
        if (i == 0 && trace_writer_append_after_cpu(w, &cpu, e) != 0) {
            fprintf(stderr, "trace_gen: %s\n", trace_writer_error(w));
            exit(1);
        }
        if (i > 0)
            gen_put(w, e);
    }
    /* the frontend's /srv/data.bin through a descriptor this process did
     * not open (no path here): info names it from the frontend's trace,
     * and counts what sendfile read from it */
    e = gen_ev(&ev, TRACE_EV_FILE, TRACE_FILE_SENDFILE, 2000, 1000);
    e->u.file = (struct trace_file_event){
        .fd = 6, .fd2 = 4, .dev = 2049, .ino = 777, .offset = 0, .size = 40, .result = 40};
    gen_put(w, e);
    gen_put(w, gen_ev(&ev, TRACE_EV_THREAD_EXIT, 0, 2000, 0));
    gen_close(w);
}

static void gen_seeds(const char *dir)
{
    struct trace_event evs[64];
    struct trace_test_mix m;
    trace_test_mix_init(&m, 3, 99);
    struct trace_writer_options small = {.frame_bytes = 1024};
    struct trace_writer *w = gen_open(dir, "mix.trace", 1, "mix", &small);
    size_t n = trace_test_mix_preamble(&m, evs);
    for (size_t i = 0; i < n; i++)
        gen_put(w, &evs[i]);
    for (int i = 0; i < 600; i++) {
        trace_test_mix_next(&m, &evs[0]);
        gen_put(w, &evs[0]);
    }
    gen_close(w);
    struct trace_writer_options ring = {.frame_bytes = 1024, .max_bytes = 6000};
    w = gen_open(dir, "ring.trace", 2, "ring", &ring);
    for (size_t i = 0; i < n; i++)
        gen_put(w, &evs[i]);
    trace_test_mix_init(&m, 3, 98);
    n = trace_test_mix_preamble(&m, evs);
    for (size_t i = 0; i < n; i++)
        gen_put(w, &evs[i]);
    for (int i = 0; i < 3000; i++) {
        trace_test_mix_next(&m, &evs[0]);
        gen_put(w, &evs[0]);
    }
    gen_close(w);
    gen_frontend(dir);
    gen_backend(dir);
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "big-stacks")) {
        char err[512];
        if (trace_test_write_big_stacks(argv[2], (uint32_t)strtoul(argv[3], NULL, 10), err,
                                        sizeof err) != 0) {
            fprintf(stderr, "trace_gen: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "many")) {
        char err[512];
        if (trace_test_write_many(argv[2], argv[3], (uint32_t)strtoul(argv[4], NULL, 10), err,
                                  sizeof err) != 0) {
            fprintf(stderr, "trace_gen: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "big-strings")) {
        char err[512];
        if (trace_test_write_big_strings(argv[2], (uint32_t)strtoul(argv[3], NULL, 10),
                                         (uint32_t)strtoul(argv[4], NULL, 10), err,
                                         sizeof err) != 0) {
            fprintf(stderr, "trace_gen: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "dir") && strcmp(argv[1], "seeds"))) {
        fprintf(stderr,
                "usage: trace_gen dir|seeds DIR | big-strings FILE N LEN | big-stacks FILE N | "
                "many FILE tids|conns|fds|locks N\n");
        return 2;
    }
    if (!strcmp(argv[1], "dir")) {
        gen_frontend(argv[2]);
        gen_backend(argv[2]);
    } else {
        gen_seeds(argv[2]);
    }
    return 0;
}

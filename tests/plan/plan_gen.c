/* plan_gen.c - writes the replay plan that tests/plan/test_plan_info.sh
 * checks `preplay info` against (known contents: keep the numbers in the
 * script in sync with this file), through the streaming writer as the
 * analyzer would. Usage: plan_gen PATH [FRAME_BYTES] (small frames make a
 * multi-frame plan, e.g. for the fuzz seed corpus). Test code only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define S(w, s) plan_writer_string(w, s, strlen(s))

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: plan_gen PATH [FRAME_BYTES]\n");
        return 2;
    }
    char err[1024];
    struct trace_cpu_score score = {"zstd-compress", 0.25};
    struct plan_writer *w = plan_writer_open(argv[1], "rec-info-test", &score, 1, err, sizeof err);
    if (!w) {
        fprintf(stderr, "plan_gen: %s\n", err);
        return 1;
    }
    if (argc == 3 && plan_writer_set_frame_bytes(w, strtoul(argv[2], NULL, 10)) != 0) {
        fprintf(stderr, "plan_gen: %s\n", plan_writer_error(w));
        plan_writer_abort(w);
        return 1;
    }
    uint32_t host = S(w, "h1");
    struct plan_component app = {S(w, "app"), host, 2, 1, 9000, 0, 0, 1}; /* 2 event loops */
    struct plan_component fe = {S(w, "frontend"), host, 4, 0, 8080, 0, 1, 0};
    plan_writer_component(w, &app); /* 0 */
    plan_writer_component(w, &fe);  /* 1 */
    struct plan_file f = {S(w, "/srv/data"), 4096};
    plan_writer_file(w, &f);
    struct plan_lock l = {1, 0x1234};
    plan_writer_lock(w, &l);
    struct plan_db_endpoint e = {S(w, "127.0.0.1:3306")};
    plan_writer_db_endpoint(w, &e);
    uint32_t sql = S(w, "SELECT price FROM items WHERE id = ?");

    /* block 0 (app): cpu 2 ms, db 3 ms, net 1.5 us; recorded 6 ms */
    struct plan_op b0[5] = {
        {.kind = PLAN_OP_SOCKOPT, .a.sockopt = {6, 1, 1}},
        {.kind = PLAN_OP_RECV, .recorded_ns = 1000, .a.net.bytes = 120},
        {.kind = PLAN_OP_CPU, .recorded_ns = 2100000, .a.cpu_ns = 2000000},
        {.kind = PLAN_OP_DB,
         .op = PLAN_DB_QUERY,
         .recorded_ns = 3000000,
         .a.db = {0, sql, 0, 1, 0}},
        {.kind = PLAN_OP_SEND, .recorded_ns = 500, .a.net.bytes = 80},
    };
    struct plan_block blk0 = {0, 0, 0, 5, 0, 6000000, 0, 0, 0};
    plan_writer_block(w, &blk0, b0, NULL, 0);

    /* block 1 (frontend, GET /cart): own cpu 1 ms, file 0.4 ms, lock 50 us,
     * net 10 us + 20 us + (7 ms call - 6 ms callee) */
    uint32_t get = S(w, "GET /cart");
    struct plan_segment segs[2] = {{0, 0, 120}, {1, 0, 80}};
    struct plan_op b1[6] = {
        {.kind = PLAN_OP_RECV, .recorded_ns = 10000, .a.net.bytes = 300},
        {.kind = PLAN_OP_CPU, .recorded_ns = 1000000, .a.cpu_ns = 1000000},
        {.kind = PLAN_OP_FILE, .op = PLAN_FILE_READ, .recorded_ns = 400000, .a.file = {0, 0, 4096}},
        {.kind = PLAN_OP_LOCK,
         .op = PLAN_LOCK_ACQUIRE,
         .recorded_ns = 50000,
         .a.lock = {0, PLAN_LOCK_EXCLUSIVE}},
        {.kind = PLAN_OP_CALL, .recorded_ns = 7000000, .a.call = {0, 0, 2}},
        {.kind = PLAN_OP_SEND, .recorded_ns = 20000, .a.net.bytes = 2000},
    };
    struct plan_block blk1 = {1, get, 0, 6, 0, 9000000, 0, 1000, 0};
    plan_writer_block(w, &blk1, b1, segs, 2);

    /* block 2 (frontend, POST /buy, flagged): own cpu 5 ms, external 2.5 ms,
     * a call shorter than its callee (no net part), file 1 ms */
    uint32_t post = S(w, "POST /buy");
    struct plan_op b2[4] = {
        {.kind = PLAN_OP_CPU, .recorded_ns = 5000000, .a.cpu_ns = 5000000},
        {.kind = PLAN_OP_EXTERNAL,
         .recorded_ns = 2500000,
         .a.external = {S(w, "10.1.1.1:443"), 500, 7000}},
        {.kind = PLAN_OP_CALL, .recorded_ns = 5000000, .a.call = {0, 0, 0}},
        {.kind = PLAN_OP_FILE,
         .op = PLAN_FILE_WRITE,
         .recorded_ns = 1000000,
         .a.file = {0, 4096, 100}},
    };
    struct plan_block blk2 = {1, post, 0, 4, PLAN_BLOCK_VIOLATION, 14000000, 1, 2000, 0};
    plan_writer_block(w, &blk2, b2, NULL, 0);

    for (uint32_t i = 0; i < 5; i++) {
        struct plan_request r = {i * 1000000ull, i < 3 ? 1 : 2, i < 3 ? get : post, i % 2, i, 0};
        plan_writer_request(w, &r);
    }
    plan_writer_summary(w, 0.995, 1234, 1,
                        "frontend: thread 12 interleaved connections 3 and 4 (17 events)");
    if (plan_writer_close(w, err, sizeof err) != 0) {
        fprintf(stderr, "plan_gen: %s\n", err);
        return 1;
    }
    return 0;
}

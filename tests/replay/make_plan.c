/* make_plan.c - writes the hand-built plans the replay script tests run:
 *   make_plan two-tier OUT   front-end "web" (2 workers) calling "app" (2 workers):
 *                            "GET /fast" (CPU 300 us, call, 2 KiB answer) and
 *                            "POST /slow" (file write+read, lock, CPU 2 ms,
 *                            external 1 ms, call); 50 requests/s for 1 s.
 *   make_plan burst OUT      one front end "web" (2 workers): "GET /page" (CPU
 *                            300 us) every 50 ms over 3.5 s, and a burst of 81
 *                            "POST /order" (CPU 1 ms, external 4 ms) 11 ms apart
 *                            from 2.6 s on: 151 requests, the orders only at the
 *                            end (the whole-schedule tests).
 *   make_plan db OUT DBNAME  one component doing INSERT/SELECT on table t of
 *                            DBNAME (the DB replay and restore test).
 *   make_plan wide OUT W     one front end "web" of W workers in a plan with
 *                            2^20 files and 2^20 locks (plan.h's limits),
 *                            "GET /" a CPU op of 100 us: what a worker's
 *                            state costs in a wide plan (issue 24 item 1).
 *   make_plan lemp OUT       nginx + php-fpm in miniature: "web" (one event
 *                            loop, CPU 30 us) calls "php" (4 workers, CPU
 *                            150 us, a 4 KiB file read) per "GET /page",
 *                            100 requests/s for 1 s (the replayer-cost
 *                            bench: its own CPU beside the recorded CPU).
 *   make_plan burst OUT CHAIN_S   the burst plan recorded, as it says, on
 *                            this machine's CPU with a burn-chain score of
 *                            CHAIN_S seconds (the run's ratio is its own
 *                            chain score / CHAIN_S: a hostile plan's).
 * Test code: exits non-zero with a message on failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ratio.h"
#include "replay_exec.h"
#include "replay_fixture.h"

static struct plan_op db_op(struct plan *p, uint8_t kind, const char *sql, const char *params)
{
    struct plan_op o = {.kind = PLAN_OP_DB, .op = kind};
    o.a.db.sql = fixture_string(p, sql);
    o.a.db.params = params ? fixture_string(p, params) : 0;
    return o;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: make_plan two-tier|burst|db|wide|lemp OUT [DBNAME|WORKERS]\n");
        return 2;
    }
    struct plan *p = fixture_plan_new();
    strcpy(p->recording_id, "hand-built");
    if (!strcmp(argv[1], "two-tier")) {
        uint32_t web = fixture_component(p, "web", 2, 1);
        uint32_t app = fixture_component(p, "app", 2, 0);
        uint32_t file = fixture_file(p, 1 << 20);
        uint32_t lock = fixture_lock(p);
        uint32_t app_fast = fixture_block(p, app, "app:fast");
        fixture_op(p, fixture_net(0, 120, 0));
        fixture_op(p, fixture_cpu(200000));
        fixture_op(p, fixture_net(1, 800, 0));
        uint32_t app_slow = fixture_block(p, app, "app:slow");
        fixture_op(p, fixture_net(0, 300, 0));
        fixture_op(p, fixture_lockop(PLAN_LOCK_ACQUIRE, lock, PLAN_LOCK_EXCLUSIVE));
        fixture_op(p, fixture_fileop(PLAN_FILE_WRITE, file, 4096, 8192));
        fixture_op(p, fixture_lockop(PLAN_LOCK_RELEASE, lock, PLAN_LOCK_EXCLUSIVE));
        fixture_op(p, fixture_fileop(PLAN_FILE_READ, file, 65536, 16384));
        fixture_op(p, fixture_cpu(1000000));
        fixture_op(p, fixture_net(1, 4000, 0));
        uint32_t fast = fixture_block(p, web, "GET /fast");
        fixture_op(p, fixture_net(0, 400, 0));
        fixture_op(p, fixture_cpu(300000));
        static const int32_t fs[] = {120, -800};
        fixture_call(p, app_fast, fs, 2, 0, REPLAY_CALL_NODELAY);
        fixture_op(p, fixture_net(1, 2048, 0));
        uint32_t slow = fixture_block(p, web, "POST /slow");
        fixture_op(p, fixture_net(0, 1500, 0));
        fixture_op(p, fixture_cpu(1000000));
        fixture_op(p, fixture_external(1000000));
        static const int32_t ss[] = {200, 100, -4000};
        fixture_call(p, app_slow, ss, 3, 1, REPLAY_CALL_NODELAY);
        fixture_op(p, fixture_net(1, 512, PLAN_SEG_MORE));
        fixture_op(p, fixture_net(1, 1024, 0));
        for (int i = 0; i < 50; i++)
            fixture_request(p, i % 3 ? fast : slow, (uint64_t)i * 20000000, 0, 0);
    } else if (!strcmp(argv[1], "burst")) {
        uint32_t web = fixture_component(p, "web", 2, 1);
        uint32_t page = fixture_block(p, web, "GET /page");
        fixture_op(p, fixture_net(0, 300, 0));
        fixture_op(p, fixture_cpu(300000));
        fixture_op(p, fixture_net(1, 2048, 0));
        uint32_t order = fixture_block(p, web, "POST /order");
        fixture_op(p, fixture_net(0, 800, 0));
        fixture_op(p, fixture_cpu(1000000));
        fixture_op(p, fixture_external(4000000));
        fixture_op(p, fixture_net(1, 300, 0));
        for (int i = 0; i < 70; i++)
            fixture_request(p, page, (uint64_t)i * 50000000, 0, 0);
        for (int i = 0; i < 81; i++)
            fixture_request(p, order, 2600000000u + (uint64_t)i * 11000000, 0, 0);
        if (argc == 4) { /* this CPU's identity and a chain score */
            struct cpu_ratio_scores s = {.n = 1};
            snprintf(s.name[0], sizeof s.name[0], "%s", CPU_KERNELS_CHAIN);
            s.seconds[0] = atof(argv[3]);
            s.log_se[0] = CPU_RATIO_SE_FLOOR;
            cpu_ratio_identify(&s);
            p->ncpu_scores = cpu_ratio_header_scores(&s, p->cpu_scores, TRACE_MAX_CPU_SCORES);
        }
    } else if (!strcmp(argv[1], "db") && argc == 4) {
        uint32_t c = fixture_component(p, "dbapp", 2, 1);
        p->components[c].db_conns = 1;
        char sql[256];
        uint32_t ins = fixture_block(p, c, "POST /insert");
        fixture_op(p, fixture_net(0, 100, 0));
        snprintf(sql, sizeof sql, "INSERT INTO %s.t (id, name) VALUES (?, ?)", argv[3]);
        fixture_op(p, db_op(p, PLAN_DB_EXECUTE, sql, "1000, 'replayed'"));
        fixture_op(p, fixture_net(1, 100, 0));
        uint32_t sel = fixture_block(p, c, "GET /select");
        fixture_op(p, fixture_net(0, 100, 0));
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM %s.t", argv[3]);
        fixture_op(p, db_op(p, PLAN_DB_QUERY, sql, NULL));
        fixture_op(p, db_op(p, PLAN_DB_QUERY, "SELEC broken", NULL));
        fixture_op(p, fixture_net(1, 100, 0));
        fixture_request(p, ins, 0, 0, 0);
        for (int i = 1; i < 40; i++)
            fixture_request(p, sel, (uint64_t)i * 10000000, 0, 0);
    } else if (!strcmp(argv[1], "wide") && argc == 4) {
        uint32_t web = fixture_component(p, "web", (uint32_t)atoi(argv[3]), 1);
        for (uint32_t i = 0; i < PLAN_MAX_FILES; i++)
            fixture_file(p, 0);
        for (uint32_t i = 0; i < PLAN_MAX_LOCKS; i++)
            fixture_lock(p);
        uint32_t get = fixture_block(p, web, "GET /");
        fixture_op(p, fixture_net(0, 100, 0));
        fixture_op(p, fixture_cpu(100000));
        fixture_op(p, fixture_net(1, 100, 0));
        fixture_request(p, get, 0, 0, 0);
    } else if (!strcmp(argv[1], "lemp")) {
        uint32_t web = fixture_component(p, "web", 1, 1);
        p->components[web].event_loop = 1;
        uint32_t php = fixture_component(p, "php", 4, 0);
        uint32_t file = fixture_file(p, 1 << 20);
        uint32_t script = fixture_block(p, php, "php:/page");
        fixture_op(p, fixture_net(0, 800, 0));
        fixture_op(p, fixture_fileop(PLAN_FILE_READ, file, 8192, 4096));
        fixture_op(p, fixture_cpu(150000));
        fixture_op(p, fixture_net(1, 3000, 0));
        uint32_t page = fixture_block(p, web, "GET /page");
        fixture_op(p, fixture_net(0, 450, 0));
        fixture_op(p, fixture_cpu(30000));
        static const int32_t segs[] = {800, -3000};
        fixture_call(p, script, segs, 2, 0, REPLAY_CALL_NODELAY);
        fixture_op(p, fixture_net(1, 3100, 0));
        for (int i = 0; i < 100; i++)
            fixture_request(p, page, (uint64_t)i * 10000000, 0, 0);
    } else {
        fprintf(stderr, "make_plan: unknown plan '%s'\n", argv[1]);
        return 2;
    }
    char err[512];
    if (plan_write(p, argv[2], err, sizeof err)) {
        fprintf(stderr, "make_plan: %s\n", err);
        return 1;
    }
    fixture_plan_free(p);
    return 0;
}

/* fuzz_pg_wire.c - libFuzzer target for the PostgreSQL protocol parser
 * (tracer/preload/pg_wire.c, through db_wire.c's entry points, which hand
 * a PostgreSQL connection to it) and the opening detector
 * (tracer/preload/pg_greeting.c), which read whatever bytes a traced
 * program exchanges with its DB, inside that program: a crash there would
 * be the program's. The input is fuzz_db_wire.c's script of transfers:
 *
 *   [op][len lo][len hi][split][len bytes]...
 *
 * op % 7: 0 the client sends (parsed after the send), 1 the client sends
 * (parsed before it; half of the bytes move when `split` is odd, none when
 * split & 2), 2 the server's bytes arrive, 3 TLS plaintext sent, 4 TLS
 * plaintext received, 5 a new connection on the descriptor, 6 the bytes go
 * to tracer_pg_opening, tracer_pg_answer and tracer_pg_frontend_run (two
 * iovecs; every prefix: MORE only while
 * n < cap, a verdict never changes with more bytes). `split` cuts the bytes
 * into two iovecs; its bit 4 makes a second thread do the transfer. Every
 * event written lands in a ring of our own, each checked to be a DB event
 * of the PostgreSQL dialect whose strings were interned in bounds and
 * that is flagged cut exactly when it carries a real length. The first
 * input byte picks the --db-max-statement cap (bit 0: 5000, else 100) and
 * where the conversation starts (bits 1-2: 0 before the StartupMessage,
 * as a --db-port connection; 1 after it, as one told by the server's
 * answer; 2 in TLS, as after an accepted SSLRequest). The seeds in
 * tests/fuzz/corpus/fuzz_pg_wire/ are real conversations recorded with
 * tests/fuzz/record_db_wire_seed.py (first byte 1: from the start). */
#include "fuzz_wire_harness.h"
#include "pg_greeting.h"
#include "pg_wire.h"

/* The opening detectors on every prefix of p (an exact-size copy, for
 * ASan), with room cap. */
static void fuzz_pg_greeting(const uint8_t *p, size_t n, uint8_t cap)
{
    int last = TRACER_PG_ANSWER_MORE;
    for (size_t k = 0; k <= n; k++) {
        unsigned char *s = malloc(k ? k : 1);
        if (!s)
            return;
        memcpy(s, p, k);
        int open = tracer_pg_opening(s, k);
        int v = tracer_pg_answer(s, k, cap);
        struct iovec iov[2] = {{s, k / 2}, {s + k / 2, k - k / 2}};
        int run = tracer_pg_frontend_run(iov, 2, k);
        free(s);
        if (run < 0 || run > 1 || (k < 5 && run))
            abort();
        if (open < TRACER_PG_OPEN_NO || open > TRACER_PG_OPEN_GSS || (k < 8 && open))
            abort();
        if (v < TRACER_PG_ANSWER_NO || v > TRACER_PG_ANSWER_YES)
            abort();
        if (v == TRACER_PG_ANSWER_MORE && k >= cap)
            abort(); /* no room left, yet it waits for more */
        if (last != TRACER_PG_ANSWER_MORE && v != last)
            abort(); /* decided, then changed its mind */
        last = v;
    }
}

/* bits 1-2 of the first byte: where the conversation starts */
static void fuzz_pg_prepare(struct tracer_fd *f, uint8_t first)
{
    unsigned start = (first >> 1) & 3;
    f->db_dialect = TRACE_DB_POSTGRESQL;
    f->db_pg_init = start == 1   ? TRACER_PG_INIT_STARTED
                    : start == 2 ? TRACER_PG_INIT_STARTED | TRACER_PG_INIT_TLS
                                 : 0;
}

static const struct fuzz_wire_target fuzz_pg_wire_target = {
    .pg_only = 1, .nops = 7, .prepare = fuzz_pg_prepare, .extra_op = fuzz_pg_greeting};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_wire_run(&fuzz_pg_wire_target, data, size);
}

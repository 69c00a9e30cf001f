/* fuzz_db_wire.c - libFuzzer target for the MySQL wire parser
 * (tracer/preload/db_wire.c), which reads whatever bytes a traced program exchanges
 * with a DB endpoint, inside that program: a crash there would be the
 * program's. The input is a script of transfers on DB connections:
 *
 *   [op][len lo][len hi][split][len bytes]...
 *
 * op % 6: 0 the client sends (parsed after the send), 1 the client sends
 * (parsed before it; the send moves only half of the bytes when `split` is
 * odd, none when split & 2: the app would send the rest again), 2 the server's bytes
 * arrive, 3 a TLS connection's plaintext sent (SSL_write: parsed before it
 * goes out), 4 one received (SSL_read), 5 a new connection on the descriptor (what the old one owed
 * is written). `split` also cuts the bytes into two iovecs, and its bit 4
 * makes a second thread do the transfer (a sender and a reader thread, as
 * Connector/J's batches have: the reader writes the sender's events). Every event
 * the parser writes lands in a ring of our own, each checked to be a DB
 * event whose query and parameter strings were interned in bounds. The
 * first input byte picks the --db-max-statement cap (odd: 5000, above the
 * per-thread parameter buffer, so long lists are rendered again into a
 * mapping; even: 100), so statements longer than one send or than the cap
 * are gathered across sends and cut. The harness (fuzz_wire_harness.h)
 * defines the tracer symbols db_wire.c needs. */
#include "fuzz_wire_harness.h"

static const struct fuzz_wire_target fuzz_db_wire_target = {.pg_only = 0, .nops = 6};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_wire_run(&fuzz_db_wire_target, data, size);
}

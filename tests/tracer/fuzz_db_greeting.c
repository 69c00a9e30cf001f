/* fuzz_db_greeting.c - libFuzzer target for the DB greeting detector
 * (tracer/preload/db_greeting.c), which reads the first bytes any server
 * sends a traced client, inside that client. Input: a byte picking the
 * caller's room (cap, 0..255), then the received bytes. Checks what
 * io_events.c relies on: MORE only while n < cap; the verdict on a prefix
 * is never contradicted by more bytes (a NO or YES stays); no read past the
 * bytes given (an exact-size copy, for ASan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db_greeting.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t cap = data[0];
    size_t n = size - 1;
    int last = TRACER_DB_GREETING_MORE;
    /* every prefix, as reads that deliver a byte at a time would */
    for (size_t k = 0; k <= n; k++) {
        unsigned char *s = malloc(k ? k : 1);
        if (!s)
            return 0;
        memcpy(s, data + 1, k);
        int v = tracer_db_greeting(s, k, cap);
        free(s);
        if (v < TRACER_DB_GREETING_NO || v > TRACER_DB_GREETING_YES)
            abort();
        if (v == TRACER_DB_GREETING_MORE && k >= cap)
            abort(); /* no room left, yet it waits for more */
        if (last != TRACER_DB_GREETING_MORE && v != last)
            abort(); /* decided, then changed its mind */
        if (last != TRACER_DB_GREETING_MORE)
            break; /* the caller stops asking */
        last = v;
    }
    return 0;
}
